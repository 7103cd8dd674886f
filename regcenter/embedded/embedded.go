// Package embedded runs a single-member etcd inside the process, the
// registry with nothing to install: for a demo, a test, or a program whose
// instances all run on one host. It is a package of its own so that only
// the programs that start one link etcd's server (its storage, raft, and
// their own dependencies); a program that reaches ZooKeeper or an etcd
// cluster through [regcenter] does not.
package embedded

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcd"
)

// Config configures [New] and [Start]: a single-member etcd inside the
// process, for one host.
type Config struct {
	// Dir holds the member's data: created if missing, kept by Close, so a
	// program started again finds its jobs where it left them. Required.
	// One process at a time may run a member on a Dir: it holds a lock on
	// the Dir's [HostFile], and a second start on the Dir fails at once
	// with [ErrDirInUse]. Other processes of the host reach the member by
	// naming the Dir in [regcenter.Config.EmbeddedDir], or share it with
	// [Join], which hosts it or connects to it as the lock says. Start makes it owner-only (0700)
	// and keeps in it the member's credentials
	// ([regcenter.EmbeddedCredentialsFile], 0600: a user and a random
	// password made at the first start; etcd's authentication is on, and
	// a client without them is refused) and, while it runs, its endpoint
	// ([regcenter.EmbeddedEndpointFile]).
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
	// Logger receives [Join]'s events (a take-over). Default
	// slog.Default().
	Logger *slog.Logger
}

// Center is a [regcenter.Center] on a single-member etcd that runs inside
// this process: nothing to install or start, data on disk in [Config.Dir],
// clients served on the loopback interface only, and only those with the
// credentials kept in Dir: any user of the host can reach the port, only
// the Dir's owner (and root) can read the credentials.
//
// It is for one host: a demo, a test, a program whose instances all run on
// one machine. It is not for several hosts: the member listens on
// 127.0.0.1 only, and with one member the registry lives and dies with this
// process; instances on other hosts, and any failover between hosts, need
// an etcd cluster ([regcenter.Config.Etcd]) or ZooKeeper
// ([regcenter.Config.Servers]).
//
// Several centers on one embedded member, say one per scheduler of a demo
// that runs a cluster in one process, come from [Start]. Several processes
// of one host share a member with [Join], which also takes the member over
// in another of them when its host ends.
type Center struct {
	*etcd.Center
	server *Server
}

// Server is the single-member etcd of [New] without a center: start it
// once, then open as many centers on it as the program needs with
// [etcd.Open] (or [regcenter.Open]) and [Server.Config], each with
// a session of its own, as separate processes would have. Close every
// center before the server. The same limits as [Center]'s apply: one
// host, loopback only.
type Server struct {
	srv      *embed.Etcd
	endpoint string
	dir      string
	digest   string   // the member's user:password
	lock     *dirLock // held until the member has stopped

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
	e, err := etcd.Open(ctx, server.Config(cfg), opts...)
	if err != nil {
		return nil, errors.Join(err, server.Close())
	}
	return &Center{Center: e, server: server}, nil
}

// Start starts the single-member etcd of [New], with its data in ec.Dir
// and serving 127.0.0.1 only, and returns it without a center. Only
// ec.Dir, ec.ClientPort and ec.StartTimeout are read. On a Dir without
// credentials it makes them and turns the member's authentication on
// (see [Config.Dir]). It fails with [regcenter.ErrInvalidConfig] when Dir
// is missing or cannot be used, and with [regcenter.ErrUnauthorized] when
// the member refuses the credentials file in Dir (one replaced, or copied
// from another Dir). While another process (or another Server of this
// one) hosts the member of Dir, it fails at once with [ErrDirInUse], naming
// that process and its endpoint; it never waits for it.
func Start(ctx context.Context, ec Config) (*Server, error) {
	if err := checkStart(&ec); err != nil {
		return nil, err
	}
	lock, err := lockDir(ec.Dir)
	if err != nil {
		return nil, err
	}
	return startLocked(ctx, ec, lock)
}

// checkStart checks ec for Start and fills in its defaults; it makes Dir
// owner-only, creating it if missing.
func checkStart(ec *Config) error {
	if ec.Dir == "" {
		return fmt.Errorf("%w: embedded etcd: dir is required (where the member keeps its data)", regcenter.ErrInvalidConfig)
	}
	if ec.ClientPort < 0 || ec.ClientPort > 65535 {
		return fmt.Errorf("%w: embedded etcd: clientPort %d is not a port", regcenter.ErrInvalidConfig, ec.ClientPort)
	}
	if ec.StartTimeout == 0 {
		ec.StartTimeout = 30 * time.Second
	}
	if ec.StartTimeout < 0 {
		return fmt.Errorf("%w: embedded etcd: startTimeout must not be negative", regcenter.ErrInvalidConfig)
	}
	if err := ownerOnlyDir(ec.Dir); err != nil {
		return fmt.Errorf("%w: embedded etcd: dir: %v", regcenter.ErrInvalidConfig, err)
	}
	return nil
}

// startLocked starts the member of ec.Dir, whose lock this process holds;
// the Server keeps the lock until it has stopped, and a failed start
// releases it.
func startLocked(ctx context.Context, ec Config, lock *dirLock) (*Server, error) {
	digest, err := credentials(ec.Dir)
	if err != nil {
		return nil, errors.Join(err, lock.release())
	}
	srv, endpoint, err := startMember(ctx, ec)
	if err != nil {
		return nil, errors.Join(err, lock.release())
	}
	s := &Server{srv: srv, endpoint: endpoint, dir: ec.Dir, digest: digest, lock: lock}
	if err := s.enableAuth(ctx, ec.StartTimeout); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	if err := lock.record(endpoint); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	if err := writeFile(filepath.Join(ec.Dir, regcenter.EmbeddedEndpointFile), endpoint+"\n"); err != nil {
		return nil, errors.Join(fmt.Errorf("embedded etcd in %s: %w", ec.Dir, err), s.Close())
	}
	return s, nil
}

// Endpoint returns the member's client address, "127.0.0.1:port".
func (s *Server) Endpoint() string { return s.endpoint }

// Config returns base pointed at this member: Etcd is the member's
// endpoint and Digest its credentials; Servers, EmbeddedDir and
// DigestFile are cleared; every other field is base's. The result holds
// the password: it formats and logs redacted, but do not write it out.
func (s *Server) Config(base regcenter.Config) regcenter.Config {
	base.Servers, base.Etcd, base.EmbeddedDir = nil, []string{s.endpoint}, ""
	base.Digest, base.DigestFile = s.digest, ""
	return base
}

// Close stops the member and removes its endpoint file; it returns once
// the member has stopped. The data and the credentials stay in Dir.
// Centers still open on it lose their connection. It is idempotent.
func (s *Server) Close() error {
	// embed.Etcd.Close panics when called twice.
	s.closeOnce.Do(func() {
		err := os.Remove(filepath.Join(s.dir, regcenter.EmbeddedEndpointFile))
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		s.srv.Close() // returns once the member has stopped
		s.closeErr = errors.Join(err, drainErr(s.srv), s.lock.release())
	})
	return s.closeErr
}

// user is the member's one user: etcd's root, with every right. The
// credentials guard the member from the host's other users; whoever holds
// them may do anything, as the member's owner may with its data anyway.
const user = "root"

// bcryptCost is the member's --bcrypt-cost: the lowest. bcrypt slows the
// guessing of weak passwords from a stolen hash; the password here is
// 256 random bits, and a higher cost would only slow every client's
// authentication (by tens of milliseconds, seconds under the race
// detector).
const bcryptCost = 4

// ownerOnlyDir creates dir (0700) or takes away the access others have to
// an existing one: it holds the member's data and credentials.
func ownerOnlyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, fi.Mode().Perm()&0o700); err != nil {
			return err
		}
	}
	return nil
}

// credentials returns the member's "user:password" from its credentials
// file, making one with a new random password when there is none.
func credentials(dir string) (string, error) {
	name := filepath.Join(dir, regcenter.EmbeddedCredentialsFile)
	fi, err := os.Stat(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("embedded etcd: a password: %w", err)
		}
		digest := user + ":" + base64.RawURLEncoding.EncodeToString(b[:])
		if err := writeFile(name, digest+"\n"); err != nil {
			return "", fmt.Errorf("embedded etcd in %s: %w", dir, err)
		}
		return digest, nil
	case err != nil:
		return "", fmt.Errorf("%w: embedded etcd: %v", regcenter.ErrInvalidConfig, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(name, 0o600); err != nil {
			return "", fmt.Errorf("%w: embedded etcd: %v", regcenter.ErrInvalidConfig, err)
		}
	}
	return regcenter.Config{DigestFile: name}.ResolveDigest()
}

// writeFile replaces name with body, owner-only (0600), atomically: a
// reader sees the old file or the whole new one.
func writeFile(name, body string) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// CreateTemp makes the file 0600; say so, whatever it does later.
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if _, err := f.WriteString(body); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	ok = true
	return nil
}

// enableAuth turns on etcd's authentication with the member's user, once:
// on a member where it is on, it checks that the credentials are taken.
// Each step is one the member keeps, so a start cut short by a crash is
// completed by the next.
func (s *Server) enableAuth(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	name, pass, _ := strings.Cut(s.digest, ":")
	fail := func(step string, err error) error {
		return fmt.Errorf("embedded etcd in %s: %s: %w", s.dir, step, err)
	}
	// A client with the credentials works with authentication off too.
	refused := func(err error) bool {
		return errors.Is(rpctypes.Error(err), rpctypes.ErrAuthFailed)
	}
	const why = "%w: embedded etcd in %s: the member refuses the credentials in %s (its authentication is on, with another password)"
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.endpoint}, DialTimeout: limit, Logger: zap.NewNop(),
		Username: name, Password: pass, Context: context.WithoutCancel(ctx)})
	if err != nil {
		if refused(err) {
			return fmt.Errorf(why, regcenter.ErrUnauthorized, s.dir, regcenter.EmbeddedCredentialsFile)
		}
		return fail("connecting", err)
	}
	defer cli.Close()
	st, err := cli.AuthStatus(ctx)
	if err != nil {
		if refused(err) {
			return fmt.Errorf(why, regcenter.ErrUnauthorized, s.dir, regcenter.EmbeddedCredentialsFile)
		}
		return fail("authentication status", err)
	}
	if st.Enabled {
		return nil
	}
	if _, err := cli.UserAdd(ctx, name, pass); errors.Is(rpctypes.Error(err), rpctypes.ErrUserAlreadyExist) {
		if _, err := cli.UserChangePassword(ctx, name, pass); err != nil {
			return fail("setting the password", err)
		}
	} else if err != nil {
		return fail("adding the user", err)
	}
	if _, err := cli.UserGrantRole(ctx, name, "root"); err != nil {
		return fail("granting the root role", err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		return fail("enabling authentication", err)
	}
	return nil
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
	c.BcryptCost = bcryptCost
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
	return errors.Join(m.Center.Close(), m.server.Close())
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
