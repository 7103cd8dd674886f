// Package embedded runs a single-member etcd inside the process, the
// registry with nothing to install: for a demo, a test, or a program whose
// instances all run on one host. It is a package of its own so that only
// the programs that start one link etcd's server (its storage, raft, and
// their own dependencies); a program that reaches ZooKeeper or an etcd
// cluster through [regcenter] does not.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/shardjob/shardjob/regcenter"
)

// Config configures [New] and [Start]: a single-member etcd inside the
// process, for one host.
type Config struct {
	// Dir holds the member's data: created if missing, kept by Close, so a
	// program started again finds its jobs where it left them. Required.
	// One process at a time may use a Dir.
	Dir string
	// Namespace is the root node under which every job lives, as
	// [regcenter.Config.Namespace]. Default "shardjob".
	Namespace string
	// SessionTimeout is the session lease's TTL, as [regcenter.Config.SessionTimeout].
	// Default 10s.
	SessionTimeout time.Duration
	// ClientPort is the loopback port on which the member serves etcd
	// clients, so that other programs on this host (the CLI, etcdctl) can
	// reach it at 127.0.0.1:ClientPort. Default 0: a free port, chosen at
	// start ([Center.Endpoint] says which).
	ClientPort int
	// StartTimeout bounds how long the member may take to serve. Default
	// 30s.
	StartTimeout time.Duration
	// MaxNodeBytes is [regcenter.Config.MaxNodeBytes]. Default 0: its default.
	MaxNodeBytes int
}

// Center is a [regcenter.Center] on a single-member etcd that runs inside
// this process: nothing to install or start, data on disk in [Config.Dir],
// clients served on the loopback interface only.
//
// It is for one host: a demo, a test, a program whose instances all run on
// one machine. It is not for several hosts: the member listens on
// 127.0.0.1 only, and with one member the registry lives and dies with this
// process; instances on other hosts, and any failover between hosts, need
// an etcd cluster ([regcenter.Config.Etcd]) or ZooKeeper
// ([regcenter.Config.Servers]).
//
// Several centers on one embedded member, say one per scheduler of a demo
// that runs a cluster in one process, come from [Start].
type Center struct {
	*regcenter.Etcd
	server *Server
}

// Server is the single-member etcd of [New] without a center: start it
// once, then open as many centers on it as the program needs with
// [regcenter.NewEtcd] (or [regcenter.Open]) and [Server.Config], each with
// a session of its own, as separate processes would have. Close every
// center before the server. The same limits as [Center]'s apply: one
// host, loopback only.
type Server struct {
	srv      *embed.Etcd
	endpoint string

	closeOnce sync.Once
	closeErr  error
}

// maxTxnOps is the embedded member's --max-txn-ops: room for the
// largest transaction a scheduler makes (etcd's default is 128).
const maxTxnOps = 1 << 14

// New starts a single-member etcd with its data in ec.Dir, serving
// 127.0.0.1 only, and returns a center on it. Close stops both. It fails
// with [regcenter.ErrInvalidConfig] when Dir is missing or cannot be used.
func New(ctx context.Context, ec Config, opts ...regcenter.Option) (*Center, error) {
	cfg := regcenter.Config{Etcd: []string{"127.0.0.1:1"}, Namespace: ec.Namespace, SessionTimeout: ec.SessionTimeout, MaxNodeBytes: ec.MaxNodeBytes}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	server, err := Start(ctx, ec)
	if err != nil {
		return nil, err
	}
	e, err := regcenter.NewEtcd(ctx, server.Config(cfg), opts...)
	if err != nil {
		return nil, errors.Join(err, server.Close())
	}
	return &Center{Etcd: e, server: server}, nil
}

// Start starts the single-member etcd of [New], with its data in ec.Dir
// and serving 127.0.0.1 only, and returns it without a center. Only
// ec.Dir, ec.ClientPort and ec.StartTimeout are read. It fails with
// [regcenter.ErrInvalidConfig] when Dir is missing or cannot be used.
func Start(ctx context.Context, ec Config) (*Server, error) {
	if ec.Dir == "" {
		return nil, fmt.Errorf("%w: embedded etcd: dir is required (where the member keeps its data)", regcenter.ErrInvalidConfig)
	}
	if ec.ClientPort < 0 || ec.ClientPort > 65535 {
		return nil, fmt.Errorf("%w: embedded etcd: clientPort %d is not a port", regcenter.ErrInvalidConfig, ec.ClientPort)
	}
	if ec.StartTimeout == 0 {
		ec.StartTimeout = 30 * time.Second
	}
	if ec.StartTimeout < 0 {
		return nil, fmt.Errorf("%w: embedded etcd: startTimeout must not be negative", regcenter.ErrInvalidConfig)
	}
	if err := os.MkdirAll(ec.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: embedded etcd: dir: %v", regcenter.ErrInvalidConfig, err)
	}
	srv, endpoint, err := startMember(ctx, ec)
	if err != nil {
		return nil, err
	}
	return &Server{srv: srv, endpoint: endpoint}, nil
}

// Endpoint returns the member's client address, "127.0.0.1:port".
func (s *Server) Endpoint() string { return s.endpoint }

// Config returns base pointed at this member: Etcd is the member's
// endpoint and Servers is cleared; every other field is base's.
func (s *Server) Config(base regcenter.Config) regcenter.Config {
	base.Servers, base.Etcd = nil, []string{s.endpoint}
	return base
}

// Close stops the member; it returns once the member has stopped. The
// data stays in Dir. Centers still open on it lose their connection. It
// is idempotent.
func (s *Server) Close() error {
	// embed.Etcd.Close panics when called twice.
	s.closeOnce.Do(func() {
		s.srv.Close() // returns once the member has stopped
		s.closeErr = drainErr(s.srv)
	})
	return s.closeErr
}

// startMember starts the member and waits until it serves.
func startMember(ctx context.Context, ec Config) (*embed.Etcd, string, error) {
	ports, err := loopbackPorts(ec.ClientPort)
	if err != nil {
		return nil, "", err
	}
	endpoint := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	clientURL := url.URL{Scheme: "http", Host: endpoint}
	// A single member talks to no peer; its peer port is bound on the
	// loopback interface all the same.
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}

	c := embed.NewConfig()
	c.Name = "shardjob"
	c.Dir = ec.Dir
	c.ListenClientUrls = []url.URL{clientURL}
	c.AdvertiseClientUrls = []url.URL{clientURL}
	c.ListenPeerUrls = []url.URL{peerURL}
	c.AdvertisePeerUrls = []url.URL{peerURL}
	c.InitialCluster = c.Name + "=" + peerURL.String()
	c.MaxTxnOps = maxTxnOps
	c.AutoCompactionMode = embed.CompactorModePeriodic
	c.AutoCompactionRetention = "1h"
	c.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	c.Logger = "zap"

	srv, err := embed.StartEtcd(c)
	if err != nil {
		return nil, "", fmt.Errorf("embedded etcd in %s: %w", ec.Dir, err)
	}
	timer := time.NewTimer(ec.StartTimeout)
	defer timer.Stop()
	select {
	case <-srv.Server.ReadyNotify():
		return srv, endpoint, nil
	case err := <-srv.Err():
		srv.Close()
		return nil, "", fmt.Errorf("embedded etcd in %s: %w", ec.Dir, err)
	case <-timer.C:
		srv.Close()
		return nil, "", fmt.Errorf("embedded etcd in %s: not serving within %v", ec.Dir, ec.StartTimeout)
	case <-ctx.Done():
		srv.Close()
		return nil, "", fmt.Errorf("embedded etcd in %s: %w", ec.Dir, ctx.Err())
	}
}

// loopbackPorts returns the client port (client, or a free one when 0) and
// a free peer port. The member binds them right after.
func loopbackPorts(client int) ([2]int, error) {
	var out [2]int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close() // only held to keep the ports distinct
		}
	}()
	for i := range out {
		if i == 0 && client != 0 {
			out[0] = client
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return out, fmt.Errorf("embedded etcd: picking a port: %w", err)
		}
		ls = append(ls, l)
		out[i] = l.Addr().(*net.TCPAddr).Port
	}
	return out, nil
}

// Endpoint returns the member's client address, "127.0.0.1:port".
func (m *Center) Endpoint() string { return m.server.Endpoint() }

// Close ends the session (its ephemeral nodes are removed), stops the
// center and then the member. The data stays in Dir. It is idempotent.
func (m *Center) Close() error {
	return errors.Join(m.Etcd.Close(), m.server.Close())
}

// drainErr returns an error the stopped member reported, if any.
func drainErr(srv *embed.Etcd) error {
	select {
	case err, ok := <-srv.Err():
		if ok && err != nil {
			return fmt.Errorf("embedded etcd: %w", err)
		}
	default:
	}
	return nil
}
