package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcd"
)

// Shared is a center on the member of a Dir that the processes of one
// host share (see [Join]): one of them hosts the member, the others are
// its clients, and when the host is gone one of the others takes the
// member over. Close it at the end; it is safe for concurrent use.
type Shared struct {
	*etcd.Center
	ec  Config
	ns  string // the namespace, "shop"
	log *slog.Logger

	mu     sync.Mutex
	server *Server // while this process hosts the member

	// split holds the other Dirs already reported to run this
	// namespace (only the take-over loop uses it, after Join).
	split map[string]bool

	stop context.CancelFunc
	done chan struct{} // closed when the take-over loop has ended
}

// takeOverEvery is how often a client of a shared Dir checks whether the
// host is gone: one non-blocking flock, so the check costs nothing.
const takeOverEvery = 200 * time.Millisecond

// Join shares the member of ec.Dir with the other processes of this host
// that name the same Dir: the first to come hosts it (it holds the Dir's
// lock and writes the member's endpoint into the Dir, as [Start] does);
// the others connect to it as clients, through the endpoint and
// credentials files, as [regcenter.Config.EmbeddedDir] does. When the
// hosting process ends (Close, a crash, kill -9: the kernel drops its
// lock), one of the others takes the member over on the same data,
// at a port of its own, and rewrites the endpoint file; every client
// follows the file and reconnects, its session kept if that takes less
// than the session timeout. Only one host: the member listens on the
// loopback interface; across hosts use an etcd cluster or ZooKeeper.
//
// Join returns once the center has its session, within ec.StartTimeout
// (or ctx); [Shared.Hosting] says whether this process hosts the member.
// It fails as [Start] and [etcd.Open] do.
func Join(ctx context.Context, ec Config, opts ...regcenter.Option) (*Shared, error) {
	cfg := regcenter.Config{EmbeddedDir: ec.Dir, Namespace: ec.Namespace, SessionTimeout: ec.SessionTimeout, MaxNodeBytes: ec.MaxNodeBytes}
	if err := checkStart(&ec); err != nil {
		return nil, err
	}
	cfg.EmbeddedDir = ec.Dir
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(ec.Dir)
	if err != nil {
		return nil, fmt.Errorf("%w: embedded etcd: dir: %v", regcenter.ErrInvalidConfig, err)
	}
	ec.Dir = abs
	cfg.EmbeddedDir = abs
	s := &Shared{ec: ec, log: ec.Logger, done: make(chan struct{}), split: map[string]bool{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("component", "regcenter", "backend", "embedded", "dir", ec.Dir)
	ctx, cancel := context.WithTimeout(ctx, ec.StartTimeout)
	defer cancel()
	// Host the member if nobody does; else wait for the host's endpoint
	// file (it may be starting), taking over should it die meanwhile.
	for {
		if err := s.tryHost(ctx); err != nil {
			return nil, err
		}
		if s.Hosting() {
			break
		}
		if _, err := os.Stat(filepath.Join(ec.Dir, regcenter.EmbeddedEndpointFile)); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			pid, endpoint := readHost(ec.Dir)
			return nil, fmt.Errorf("%w: embedded etcd in %s: process %s hosts the member but serves no endpoint yet (%s): %w",
				regcenter.ErrUnreachable, ec.Dir, pid, endpoint, context.Cause(ctx))
		case <-time.After(takeOverEvery):
		}
	}
	deadline, _ := ctx.Deadline()
	cfg.ConnectTimeout = max(time.Until(deadline), time.Second)
	e, err := etcd.Open(ctx, cfg, opts...)
	if err != nil {
		return nil, errors.Join(err, s.closeServer())
	}
	s.Center = e
	s.ns = cfg.WithDefaults().Namespace
	recordNamespace(s.ns, ec.Dir)
	s.checkSplit()
	loop, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.takeOverLoop(loop)
	return s, nil
}

// Hosting reports whether this process hosts the member now.
func (s *Shared) Hosting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.server != nil
}

// Endpoint returns the member's client address as the Dir's endpoint
// file says now ("" when no process serves it).
func (s *Shared) Endpoint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.server != nil {
		return s.server.Endpoint()
	}
	_, endpoint := readHost(s.ec.Dir)
	if endpoint == notServing {
		return ""
	}
	return endpoint
}

// tryHost starts the member in this process if no other holds the Dir's
// lock. A Dir hosted by another is no error. Join and then the take-over
// loop call it, never both at once; s.mu is not held while the member
// starts, so Hosting and Endpoint answer meanwhile.
func (s *Shared) tryHost(ctx context.Context) error {
	if s.Hosting() {
		return nil
	}
	lock, err := lockDir(s.ec.Dir)
	if errors.Is(err, ErrDirInUse) {
		return nil
	}
	if err != nil {
		return err
	}
	srv, err := startLocked(ctx, s.ec, lock)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.server = srv
	s.mu.Unlock()
	return nil
}

// splitEvery is how often a Shared center looks for its namespace on
// another member of the host (a directory listing).
const splitEvery = 25 // take-over checks: 5s

// checkSplit logs an error, once per Dir, for each other Dir of the host
// whose running member holds this namespace too: its processes and this
// Dir's form two clusters, and each item runs in both.
func (s *Shared) checkSplit() {
	ns := s.ns
	for _, other := range otherMembers(ns, s.ec.Dir) {
		if s.split[other] {
			continue
		}
		s.split[other] = true
		pid, endpoint := readHost(other)
		s.log.Error("namespace "+ns+" runs on two embedded members of this host: each runs every item of its jobs, so every item runs twice; name one Dir in every process",
			"namespace", ns, "other_dir", other, "other_host_pid", pid, "other_endpoint", endpoint)
	}
}

// takeOverLoop checks, while this process is a client, whether the host
// is gone, and then takes the member over; now and then it looks for its
// namespace on another member of the host. It ends with ctx.
func (s *Shared) takeOverLoop(ctx context.Context) {
	defer close(s.done)
	timer := time.NewTimer(takeOverEvery)
	defer timer.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if n%splitEvery == 0 {
			s.checkSplit()
		}
		if !s.Hosting() {
			sctx, cancel := context.WithTimeout(ctx, s.ec.StartTimeout)
			err := s.tryHost(sctx)
			cancel()
			switch {
			case err != nil && ctx.Err() == nil:
				s.log.Error("taking the embedded member over failed; trying again", "err", err)
			case err == nil && s.Hosting():
				s.log.Warn("the process hosting the embedded member is gone; this process took it over", "endpoint", s.Endpoint())
			}
		}
		timer.Reset(takeOverEvery)
	}
}

// closeServer stops the member if this process hosts it.
func (s *Shared) closeServer() error {
	s.mu.Lock()
	srv := s.server
	s.server = nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Close()
}

// Close ends the session, then, if this process hosts the member, stops it
// (another process sharing the Dir takes it over). The data stays in Dir.
// It is idempotent. Requests other processes have in flight when the host
// stops its member wait for the take-over, or fail if it takes longer
// than they may wait: when every process stops at once, stop the host
// last where you can.
func (s *Shared) Close() error {
	// The session ends first, with the take-over loop still on: should
	// the host stop its member meanwhile (processes stopped together),
	// this one takes the member over and the lease is revoked all the
	// same.
	err := s.Center.Close()
	s.stop()
	<-s.done // the loop's start is bounded by StartTimeout
	return errors.Join(err, s.closeServer())
}
