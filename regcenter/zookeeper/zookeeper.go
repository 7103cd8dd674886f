package zookeeper

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path"
	"strings"
	"sync"
	stdatomic "sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/shardjob/shardjob/internal/startstop"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/internal/backend"
	"go.uber.org/atomic"
)

// Center is the [regcenter.Center] backed by a ZooKeeper ensemble. Create
// it with [Open] (or [regcenter.Open], which this package serves once
// imported); it is safe for concurrent use.
type Center struct {
	cfg  regcenter.Config
	root string
	acl  []zk.ACL
	log  *slog.Logger

	// conn is the current client. It is replaced, with a fresh session,
	// when the servers keep refusing it because they lost the state it has
	// seen (see refusals); connGen tells the replaced client's late events
	// and connections from the current one's.
	conn    stdatomic.Pointer[zk.Conn]
	connGen atomic.Uint64
	servers []string

	// refusals counts handshakes in a row that a server closed without
	// answering the connect request, and refusedAt is when the first of
	// them happened (ns since epoch). ZooKeeper refuses that way a client
	// that has seen a later transaction than the server has: after the
	// ensemble lost its data, the old client is refused forever.
	refusals  atomic.Int64
	refusedAt atomic.Int64
	replaced  atomic.Int64 // clients replaced

	epoch      time.Time    // monotonic base for lastRead
	lastRead   atomic.Int64 // ns since epoch: send time of the latest request the server answered
	negotiated atomic.Int64 // negotiated session timeout, ns
	// noMultiRead is set once the server answered that it has no
	// multiRead (older than 3.6): GetMany then reads one node at a time.
	noMultiRead atomic.Bool
	connected   atomic.Int64 // session id from the latest connect response

	// TLS, and why connecting failed (see dial.go).
	tls     *tls.Config // nil: plain TCP
	dialMu  sync.Mutex
	dialErr error // the latest failed attempt's cause

	sessions     *regcenter.SessionKeeper  // the session, its listeners, the watchdog's wake-ups
	firstSession chan struct{}             // closed when the first session starts
	watches      *backend.WatchTable[task] // the watches and the dispatcher's queue (watch.go)
	counters     backend.Counters          // the requests sent, for regcenter.Stats

	// Test hooks (export_test.go): called before the dispatcher takes a
	// batch from the queue, and before each watch is armed.
	beforeBatch, arming stdatomic.Pointer[func()]

	// group owns the center's goroutines; done is its context's Done,
	// closed when Close begins.
	group *startstop.Group
	done  <-chan struct{}
}

var _ regcenter.Center = (*Center)(nil)

func init() {
	regcenter.RegisterBackend(regcenter.BackendZooKeeper, func(ctx context.Context, cfg regcenter.Config, opts ...regcenter.Option) (regcenter.Center, error) {
		z, err := Open(ctx, cfg, opts...)
		if err != nil {
			return nil, err // not a nil *Center in a non-nil regcenter.Center
		}
		return z, nil
	})
}

// Open connects to the ZooKeeper members cfg.Servers names and returns
// once a session is established, the digest (if any) is registered and
// the namespace root exists and is accessible. It fails with
// [regcenter.ErrInvalidConfig] for a bad config (Servers must be set),
// [regcenter.ErrUnreachable] when no server answers within
// cfg.ConnectTimeout (or ctx ends first), and
// [regcenter.ErrUnauthorized] when the namespace's ACL refuses the
// configured digest.
func Open(ctx context.Context, cfg regcenter.Config, opts ...regcenter.Option) (*Center, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Servers) == 0 {
		return nil, fmt.Errorf("%w: servers: zookeeper.Open needs the ZooKeeper members (etcd, embeddedDir and url name other registries: open them with regcenter.Open)", regcenter.ErrInvalidConfig)
	}
	cfg, logger, tlsCfg, err := backend.Settle(cfg, opts)
	if err != nil {
		return nil, err
	}
	z := &Center{
		cfg:     cfg,
		root:    "/" + cfg.Namespace,
		log:     logger.With("component", "regcenter"),
		epoch:   time.Now(),
		watches: backend.NewWatchTable[task](),
		group:   startstop.New(ctx),

		firstSession: make(chan struct{}),
	}
	z.sessions = regcenter.NewSessionKeeper(z.log, regcenter.BackendZooKeeper, leaseClock{z})
	z.done = z.group.Context().Done()
	z.negotiated.Store(int64(cfg.SessionTimeout))
	z.tls = tlsCfg
	if cfg.Digest != "" {
		user, pass, _ := strings.Cut(cfg.Digest, ":")
		z.acl = zk.DigestACL(zk.PermAll, user, pass)
	} else {
		z.acl = zk.WorldACL(zk.PermAll)
	}
	z.servers = make([]string, len(cfg.Servers))
	for i, s := range cfg.Servers {
		z.servers[i] = strings.TrimSpace(s)
	}
	servers := z.servers
	if err := z.connect(); err != nil {
		return nil, fmt.Errorf("%w: %v", regcenter.ErrInvalidConfig, err)
	}
	conn := z.client()

	timer := time.NewTimer(cfg.ConnectTimeout)
	defer timer.Stop()
	select {
	case <-z.firstSession:
	case <-timer.C:
		conn.Close()
		if cause := z.lastDialErr(); cause != nil {
			return nil, fmt.Errorf("%w: no session from %s within %v: %w", regcenter.ErrUnreachable, strings.Join(servers, ","), cfg.ConnectTimeout, cause)
		}
		return nil, fmt.Errorf("%w: no session from %s within %v", regcenter.ErrUnreachable, strings.Join(servers, ","), cfg.ConnectTimeout)
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("%w: %s: %w", regcenter.ErrUnreachable, strings.Join(servers, ","), ctx.Err())
	}

	// A new group refuses nothing; were it to, Close stops what started.
	if err := errors.Join(z.group.Go(z.dispatchLoop), z.group.Go(z.watchdog), z.group.Go(z.sessions.Run)); err != nil {
		z.Close()
		return nil, err
	}

	if cfg.Digest != "" {
		user, _, _ := strings.Cut(cfg.Digest, ":")
		if err := z.client().AddAuth("digest", []byte(cfg.Digest)); err != nil {
			z.Close()
			return nil, fmt.Errorf("%w: digest auth for user %q: %v", regcenter.ErrUnauthorized, user, err)
		}
	}
	if err := z.ensureRoot(ctx); err != nil {
		z.Close()
		return nil, err
	}
	return z, nil
}

// connect starts a new client (it connects in the background) and makes
// it the current one. Events and connections of earlier clients are
// ignored from then on.
func (z *Center) connect() error {
	gen := z.connGen.Inc()
	current := func() bool { return z.connGen.Load() == gen }
	conn, _, err := zk.Connect(z.servers, z.cfg.SessionTimeout,
		zk.WithEventCallback(func(ev zk.Event) {
			if current() {
				z.onEvent(ev)
			}
		}),
		zk.WithDialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
			return z.dial(gen, network, address, timeout)
		}),
		zk.WithLogger(zkLogger{z.log}),
	)
	if err != nil {
		return err
	}
	z.refusals.Store(0)
	z.conn.Store(conn)
	return nil
}

// client returns the current ZooKeeper client.
func (z *Center) client() *zk.Conn { return z.conn.Load() }

// ensureRoot creates the namespace root if needed and proves we may use it.
func (z *Center) ensureRoot(ctx context.Context) error {
	if err := z.createRoot(ctx); err != nil {
		return z.explainAuth(err)
	}
	// Reading the root's children needs READ permission on it; a wrong
	// digest fails here rather than on the first write of a job.
	if _, err := z.Children(ctx, "/"); err != nil {
		return z.explainAuth(err)
	}
	probe := "/.access-check"
	if _, err := z.Create(ctx, probe, nil, regcenter.Ephemeral); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return z.explainAuth(err)
	}
	if err := z.Delete(ctx, probe, -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return z.explainAuth(err)
	}
	return nil
}

// createRoot creates the namespace root where it is missing: at the first
// connect, and again when ZooKeeper lost its data under a running process.
func (z *Center) createRoot(ctx context.Context) error {
	_, err := call(ctx, z, &z.counters.Writes, func() (string, error) { return z.client().Create(z.root, nil, 0, z.acl) })
	if err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return err
	}
	return nil
}

func (z *Center) explainAuth(err error) error {
	if errors.Is(err, regcenter.ErrUnauthorized) {
		if z.cfg.Digest == "" {
			return fmt.Errorf("%w: namespace %s is protected by an ACL and no digest is configured", regcenter.ErrUnauthorized, z.root)
		}
		user, _, _ := strings.Cut(z.cfg.Digest, ":")
		return fmt.Errorf("%w: digest user %q may not use namespace %s (wrong password or another owner)", regcenter.ErrUnauthorized, user, z.root)
	}
	return err
}

// Namespace returns the namespace root, e.g. "/shop".
func (z *Center) Namespace() string { return z.root }

// SessionTimeout returns the session timeout negotiated with the server.
func (z *Center) SessionTimeout() time.Duration { return time.Duration(z.negotiated.Load()) }

func (z *Center) full(p string) string {
	if p == "" || p == "/" {
		return z.root
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return z.root + p
}

func (z *Center) rel(full string) (string, bool) {
	if full == z.root {
		return "/", true
	}
	if strings.HasPrefix(full, z.root+"/") {
		return full[len(z.root):], true
	}
	return "", false
}

// ---- the connection: dialer that observes reads, session state ----

// dial wraps each TCP connection so that every answer from the server
// renews the lease and the connect response's negotiated timeout and
// session id are captured. With TLS the observer sees the plain frames
// inside it (see dialConn).
func (z *Center) dial(gen uint64, network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := z.dialConn(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &observedConn{Conn: c, z: z, gen: gen}, nil
}

// observedConn renews the lease from what the server has provably heard.
//
// A response proves the server was talking to our session when it received
// the request it answers, so the lease runs from the time that request was
// SENT, not from when its answer is read: after a freeze (SIGSTOP, a long
// GC pause) the socket may hold answers to requests sent before the freeze,
// and reading them must not make a lapsed lease look fresh. go-zookeeper
// writes each request as one Write and the server answers in order, so a
// FIFO of send times pairs each answer with its request. Notifications
// (xid -1) answer nothing and renew nothing.
type observedConn struct {
	net.Conn
	z   *Center
	gen uint64 // the client this connection belongs to

	mu    sync.Mutex
	sent  []time.Duration // send times (since epoch) of unanswered requests
	first bool            // the connect response has been parsed

	// frame parsing state for the read side
	hdr  [connectHead]byte
	have int // bytes of the current frame's header collected
	skip int // bytes of the current frame's body still to skip
}

// connectHead is the length of the connect response's fixed prefix:
// [length int32][protocolVersion int32][timeOut int32][sessionId int64].
const connectHead = 20

// replyHead is the prefix of every later frame: [length int32][xid int32].
const replyHead = 8

func (c *observedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.sent = append(c.sent, time.Since(c.z.epoch))
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *observedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.z.connGen.Load() != c.gen {
		return n, err // a replaced client's connection proves nothing
	}
	if n > 0 {
		c.parse(b[:n])
	}
	if err != nil {
		c.mu.Lock()
		refused := !c.first && len(c.sent) > 0
		c.mu.Unlock()
		if refused {
			c.z.noteRefusal()
		}
	}
	return n, err
}

// noteRefusal records a handshake the server closed without answering.
func (z *Center) noteRefusal() {
	if z.refusals.Inc() == 1 {
		z.refusedAt.Store(int64(time.Since(z.epoch)))
	}
	z.sessions.Wake()
}

// refusedTooLong reports whether the servers have refused every handshake
// for longer than a session timeout, at least three times. A server that
// is starting refuses for a moment too; one that lost the data this client
// has seen refuses forever.
func (z *Center) refusedTooLong() bool {
	return z.refusals.Load() >= 3 && time.Since(z.epoch)-time.Duration(z.refusedAt.Load()) >= z.cfg.SessionTimeout
}

// replaceClient closes a client that the servers keep refusing and starts
// a fresh one, which opens a new session: the old one cannot have survived
// a server that forgot it. The new session is announced as usual
// (SessionNew), so every job re-registers (I3).
func (z *Center) replaceClient() {
	if z.sessions.Closing() {
		return
	}
	old := z.client()
	z.log.Warn("zookeeper keeps refusing this client (the ensemble lost the data it has seen?); starting a new session",
		"refusals", z.refusals.Load(), "for", (time.Since(z.epoch) - time.Duration(z.refusedAt.Load())).Round(time.Millisecond))
	if err := z.connect(); err != nil {
		z.log.Error("starting a new zookeeper client", "err", err)
		return
	}
	z.replaced.Inc()
	old.Close()
	if z.cfg.Digest != "" {
		// The new client has no credentials yet. Requests sent before they
		// are fail with ErrUnauthorized and are retried by their owners
		// (re-registration backs off and tries again).
		conn := z.client()
		if err := z.group.Go(func(ctx context.Context) { z.authenticate(ctx, conn) }); err != nil {
			z.log.Debug("no digest auth on the new zookeeper client: the center is closing", "err", err)
		}
	}
}

// authenticate adds the digest to a replacement client, retrying until the
// server has it or the client is closed or replaced, or ctx ends.
func (z *Center) authenticate(ctx context.Context, conn *zk.Conn) {
	for {
		err := translate(conn.AddAuth("digest", []byte(z.cfg.Digest)))
		z.counters.Writes.Add(1)
		switch {
		case err == nil:
			return
		case errors.Is(err, regcenter.ErrClosed), z.client() != conn:
			return
		case !errors.Is(err, regcenter.ErrConnectionLoss):
			z.log.Error("digest auth on the new zookeeper client", "err", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(z.cfg.BaseSleep):
		}
	}
}

// parse walks the frames in p, renewing the lease for each answer.
func (c *observedConn) parse(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(p) > 0 {
		if c.skip > 0 {
			k := min(c.skip, len(p))
			c.skip -= k
			p = p[k:]
			continue
		}
		need := replyHead
		if !c.first {
			need = connectHead
		}
		k := min(need-c.have, len(p))
		copy(c.hdr[c.have:], p[:k])
		c.have += k
		p = p[k:]
		if c.have < need {
			return
		}
		length := int(binary.BigEndian.Uint32(c.hdr[0:4]))
		c.have = 0
		c.skip = max(length+4-need, 0)
		if !c.first {
			c.first = true
			if ms := int32(binary.BigEndian.Uint32(c.hdr[8:12])); ms > 0 {
				c.z.negotiated.Store(int64(time.Duration(ms) * time.Millisecond))
			}
			c.z.connected.Store(int64(binary.BigEndian.Uint64(c.hdr[12:20])))
			c.answered()
			continue
		}
		if xid := int32(binary.BigEndian.Uint32(c.hdr[4:8])); xid != -1 {
			c.answered()
		}
	}
}

// answered pops the oldest unanswered request and renews the lease from
// its send time.
func (c *observedConn) answered() {
	if len(c.sent) == 0 {
		return
	}
	at := c.sent[0]
	c.sent = c.sent[1:]
	for {
		cur := c.z.lastRead.Load()
		if int64(at) <= cur || c.z.lastRead.CompareAndSwap(cur, int64(at)) {
			return
		}
	}
}

// leaseClock is z's lease clock, for its regcenter.SessionKeeper.
type leaseClock struct{ z *Center }

func (c leaseClock) LeaseLeft() time.Duration     { return c.z.leaseLeft() }
func (c leaseClock) SinceRead() time.Duration     { return c.z.sinceRead() }
func (c leaseClock) LeaseDuration() time.Duration { return c.z.leaseDuration() }
func (leaseClock) Backend() string                { return "ZooKeeper" }

func (z *Center) sinceRead() time.Duration {
	return time.Since(z.epoch) - time.Duration(z.lastRead.Load())
}

// leaseDuration is how long after the last word from the server we still
// trust the session: two thirds of the negotiated timeout, the same bound
// the client uses to declare a connection dead. The server cannot expire
// the session earlier than a full timeout after it last heard from us.
func (z *Center) leaseDuration() time.Duration {
	return time.Duration(z.negotiated.Load()) * 2 / 3
}

func (z *Center) leaseLeft() time.Duration { return z.leaseDuration() - z.sinceRead() }

// onEvent is go-zookeeper's event callback. It runs on the client's
// receive goroutine and must never block.
func (z *Center) onEvent(ev zk.Event) {
	switch ev.Type {
	case zk.EventSession:
		z.onState(ev.State)
	case zk.EventNotWatching:
		if p, ok := z.rel(ev.Path); ok {
			z.enqueue(task{kind: taskUnarmed, path: p})
		}
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged:
		if p, ok := z.rel(ev.Path); ok {
			z.enqueue(task{kind: taskNode, path: p, zkType: ev.Type})
		}
	}
}

func (z *Center) onState(state zk.State) {
	if z.sessions.Closing() {
		return
	}
	switch state {
	case zk.StateHasSession:
		z.refusals.Store(0)
		switch z.sessions.Established(z.connected.Load()) {
		case regcenter.SessionFirst:
			close(z.firstSession) // once: the first session starts once
		case regcenter.SessionNext:
			z.enqueue(task{kind: taskResyncAll})
		}
	case zk.StateDisconnected:
		z.sessions.Suspend("connection to zookeeper lost; firing suspended")
	case zk.StateExpired:
		z.sessions.Lose(fmt.Errorf("%w: expired by zookeeper", regcenter.ErrSessionLost))
	case zk.StateAuthFailed:
		z.log.Error("zookeeper refused authentication")
	}
}

// watchdog ends the session's lease on the monotonic clock when the server
// has been silent too long, and starts a fresh generation when a lapsed
// session turns out to be alive after all. It ends with ctx.
func (z *Center) watchdog(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s := z.sessions.Current()
		wait := time.Second
		if s.Err() == nil {
			left := z.leaseLeft()
			if left <= 0 {
				z.sessions.Lapse(s, "no word from zookeeper")
				continue
			}
			wait = left
		} else if z.refusedTooLong() {
			z.replaceClient()
			continue
		} else if z.leaseLeft() > z.leaseDuration()/2 && z.client().State() == zk.StateHasSession && z.client().SessionID() == s.ID() {
			// The lease lapsed but the server is talking again on the same
			// session. Prove it with a round trip before trusting it.
			_, _, err := z.client().Exists(z.root)
			z.counters.Reads.Add(1)
			if err == nil && z.client().SessionID() == s.ID() && z.sessions.Revive(s) {
				z.enqueue(task{kind: taskResyncAll})
			}
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-z.sessions.Wakeups():
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		}
	}
}

// Session returns the current session.
func (z *Center) Session() *regcenter.Session { return z.sessions.Current() }

// OnSession registers fn for session events. Events are delivered in order
// on one goroutine; fn should return quickly.
func (z *Center) OnSession(fn func(regcenter.SessionEvent)) (cancel func()) {
	return z.sessions.Subscribe(fn)
}

// Stats returns the requests sent so far.
func (z *Center) Stats() regcenter.Stats { return z.counters.Stats(regcenter.BackendZooKeeper) }

// Close ends the session and stops the center's goroutines. It is
// idempotent.
func (z *Center) Close() error {
	if _, ok := z.sessions.Close(); !ok {
		return nil
	}
	z.group.Close()
	z.group.Cancel(regcenter.ErrClosed) // closes z.done
	z.client().Close()
	// No deadline: the client's close answers every request the loops
	// wait on, and a Wait on a context that never ends returns nil.
	return z.group.Wait(context.Background())
}

// ---- requests ----

// call runs f, which performs one request, honouring ctx: go-zookeeper has
// no contexts, so the request runs on a goroutine that ends when the client
// answers it (every request is answered: flushed with an error on
// disconnect or close).
func call[T any](ctx context.Context, z *Center, counter *stdatomic.Int64, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	select {
	case <-z.done:
		return zero, regcenter.ErrClosed
	default:
	}
	counter.Add(1)
	if ctx.Done() == nil {
		v, err := f()
		return v, z.counters.Counted(translate(err))
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, z.counters.Counted(translate(r.err))
	case <-ctx.Done():
		return zero, z.counters.Counted(ctx.Err())
	case <-z.done:
		return zero, z.counters.Counted(regcenter.ErrClosed)
	}
}

// retrying runs an idempotent request with backoff on connection errors.
func retrying[T any](ctx context.Context, z *Center, counter *stdatomic.Int64, f func() (T, error)) (T, error) {
	sleep := z.cfg.BaseSleep
	for attempt := 0; ; attempt++ {
		v, err := call(ctx, z, counter, f)
		if err == nil || !errors.Is(err, regcenter.ErrConnectionLoss) || attempt >= z.cfg.MaxRetries {
			return v, err
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-z.done:
			t.Stop()
			return v, regcenter.ErrClosed
		case <-t.C:
		}
		sleep *= 2
		if sleep > z.cfg.MaxSleep {
			sleep = z.cfg.MaxSleep
		}
	}
}

func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return regcenter.ErrNoNode
	case errors.Is(err, zk.ErrNodeExists):
		return regcenter.ErrNodeExists
	case errors.Is(err, zk.ErrBadVersion):
		return regcenter.ErrBadVersion
	case errors.Is(err, zk.ErrNotEmpty):
		return regcenter.ErrNotEmpty
	case errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrAuthFailed):
		return regcenter.ErrUnauthorized
	case errors.Is(err, zk.ErrSessionExpired):
		return fmt.Errorf("%w: expired", regcenter.ErrSessionLost)
	case errors.Is(err, zk.ErrClosing):
		return regcenter.ErrClosed
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrSessionMoved):
		return fmt.Errorf("%w: %v", regcenter.ErrConnectionLoss, err)
	}
	return err
}

func toStat(s *zk.Stat) regcenter.Stat {
	if s == nil {
		return regcenter.Stat{}
	}
	return regcenter.Stat{
		Version: s.Version, CVersion: s.Cversion, EphemeralOwner: s.EphemeralOwner,
		Czxid: s.Czxid, Mzxid: s.Mzxid,
		Ctime: time.UnixMilli(s.Ctime), Mtime: time.UnixMilli(s.Mtime),
		NumChildren: s.NumChildren, DataLength: s.DataLength,
	}
}

// Get returns a node's data and stat.
func (z *Center) Get(ctx context.Context, p string) ([]byte, regcenter.Stat, error) {
	type r struct {
		b []byte
		s *zk.Stat
	}
	v, err := retrying(ctx, z, &z.counters.Reads, func() (r, error) {
		b, s, err := z.client().Get(z.full(p))
		return r{b, s}, err
	})
	return v.b, toStat(v.s), backend.WrapPath("get", p, err)
}

// Exists reports whether a node exists.
func (z *Center) Exists(ctx context.Context, p string) (bool, regcenter.Stat, error) {
	type r struct {
		ok bool
		s  *zk.Stat
	}
	v, err := retrying(ctx, z, &z.counters.Reads, func() (r, error) {
		ok, s, err := z.client().Exists(z.full(p))
		return r{ok, s}, err
	})
	return v.ok, toStat(v.s), backend.WrapPath("exists", p, err)
}

// maxReadPaths bounds the nodes of one multiRead.
const maxReadPaths = 1000

// GetMany reads several nodes' data and stats, one multiRead per batch
// of paths (see regcenter.Center.GetMany), or one Get each on a server
// older than 3.6: such a server answers the first multiRead that it does
// not implement and closes the connection, which the client reopens
// within the session; the center then reads one node per request.
func (z *Center) GetMany(ctx context.Context, paths ...string) ([]regcenter.NodeData, error) {
	full := make([]string, len(paths))
	for i, p := range paths {
		full[i] = z.full(p)
	}
	out := make([]regcenter.NodeData, 0, len(paths))
	for _, batch := range backend.ReadBatches(full, maxReadPaths, backend.MaxNodeBytes(z.cfg)) {
		at := len(out) // batch is full[at:at+len(batch)]
		var rs []zk.MultiReadResponse
		err := zk.ErrUnimplemented
		if !z.noMultiRead.Load() {
			rs, err = retrying(ctx, z, &z.counters.Reads, func() ([]zk.MultiReadResponse, error) {
				return z.client().MultiRead(batch...)
			})
			if errors.Is(err, zk.ErrUnimplemented) && !z.noMultiRead.Swap(true) {
				z.log.Info("the ZooKeeper server has no multiRead (3.6 and newer): reading nodes one at a time")
			}
		}
		if errors.Is(err, zk.ErrUnimplemented) {
			nodes, err := z.getEach(ctx, paths[at:at+len(batch)])
			if err != nil {
				return nil, err
			}
			out = append(out, nodes...)
			continue
		}
		if err != nil {
			return nil, backend.WrapPath("get", paths[at], err)
		}
		for i, r := range rs {
			switch err := translate(r.Error); {
			case err == nil:
				data := r.Data
				if data == nil {
					data = []byte{}
				}
				out = append(out, regcenter.NodeData{Exists: true, Data: data, Stat: toStat(r.Stat)})
			case errors.Is(err, regcenter.ErrNoNode):
				out = append(out, regcenter.NodeData{})
			default:
				return nil, backend.WrapPath("get", paths[at+i], err)
			}
		}
	}
	return out, nil
}

// getEach reads paths one Get each: GetMany on a server without multiRead.
func (z *Center) getEach(ctx context.Context, paths []string) ([]regcenter.NodeData, error) {
	out := make([]regcenter.NodeData, len(paths))
	for i, p := range paths {
		data, st, err := z.Get(ctx, p)
		switch {
		case err == nil:
			out[i] = regcenter.NodeData{Exists: true, Data: data, Stat: st}
		case !errors.Is(err, regcenter.ErrNoNode):
			return nil, err
		}
	}
	return out, nil
}

// Children lists a node's children.
func (z *Center) Children(ctx context.Context, p string) ([]string, error) {
	v, err := retrying(ctx, z, &z.counters.Reads, func() ([]string, error) {
		c, _, err := z.client().Children(z.full(p))
		return c, err
	})
	return v, backend.WrapPath("children", p, err)
}

func flags(m regcenter.Mode) int32 {
	switch m {
	case regcenter.Ephemeral:
		return zk.FlagEphemeral
	case regcenter.EphemeralSequential:
		return zk.FlagEphemeral | zk.FlagSequence
	case regcenter.PersistentSequential:
		return zk.FlagSequence
	}
	return 0
}

// Create creates a node, creating missing parents as persistent nodes.
func (z *Center) Create(ctx context.Context, p string, data []byte, mode regcenter.Mode) (string, error) {
	if err := backend.CheckNodeSize(backend.MaxNodeBytes(z.cfg), "create", p, data); err != nil {
		return "", err
	}
	create := func() (string, error) { return z.client().Create(z.full(p), data, flags(mode), z.acl) }
	got, err := call(ctx, z, &z.counters.Writes, create)
	if errors.Is(err, regcenter.ErrNoNode) {
		if perr := z.createParents(ctx, path.Dir(p)); perr != nil {
			return "", backend.WrapPath("create", p, perr)
		}
		got, err = call(ctx, z, &z.counters.Writes, create)
	}
	if err != nil {
		return "", backend.WrapPath("create", p, err)
	}
	rel, _ := z.rel(got)
	return rel, nil
}

// EnsurePath creates p and its parents as empty persistent nodes where
// missing.
func (z *Center) EnsurePath(ctx context.Context, p string) error {
	// Most paths exist already (a job registering again, an item's node
	// after its first fire): one read instead of a create per level.
	if ok, _, err := z.Exists(ctx, p); err == nil && ok {
		return nil
	}
	return z.createParents(ctx, p)
}

func (z *Center) createParents(ctx context.Context, dir string) error {
	if dir == "/" || dir == "." || dir == "" {
		// The namespace root itself: gone only if ZooKeeper lost its data.
		return z.createRoot(ctx)
	}
	parts := strings.Split(strings.Trim(dir, "/"), "/")
	cur := ""
	for i, part := range parts {
		cur += "/" + part
		create := func() (string, error) { return z.client().Create(z.full(cur), nil, 0, z.acl) }
		_, err := call(ctx, z, &z.counters.Writes, create)
		if i == 0 && errors.Is(err, regcenter.ErrNoNode) {
			if err := z.createRoot(ctx); err != nil {
				return err
			}
			_, err = call(ctx, z, &z.counters.Writes, create)
		}
		if err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// Set writes a node's data.
func (z *Center) Set(ctx context.Context, p string, data []byte, version int32) (regcenter.Stat, error) {
	if err := backend.CheckNodeSize(backend.MaxNodeBytes(z.cfg), "set", p, data); err != nil {
		return regcenter.Stat{}, err
	}
	s, err := call(ctx, z, &z.counters.Writes, func() (*zk.Stat, error) { return z.client().Set(z.full(p), data, version) })
	return toStat(s), backend.WrapPath("set", p, err)
}

// Delete removes a node.
func (z *Center) Delete(ctx context.Context, p string, version int32) error {
	_, err := call(ctx, z, &z.counters.Writes, func() (struct{}, error) { return struct{}{}, z.client().Delete(z.full(p), version) })
	return backend.WrapPath("delete", p, err)
}

// DeleteTree removes a node and its descendants, deepest first.
func (z *Center) DeleteTree(ctx context.Context, p string) error {
	return backend.DeleteTree(ctx, z, p)
}

// Multi applies ops atomically.
func (z *Center) Multi(ctx context.Context, ops ...regcenter.Op) error {
	if len(ops) == 0 {
		return nil
	}
	if err := backend.CheckMultiSize(backend.MaxNodeBytes(z.cfg), ops); err != nil {
		return err
	}
	reqs, err := z.multiRequests(ops)
	if err != nil {
		return err
	}
	res, err := call(ctx, z, &z.counters.Multis, func() ([]zk.MultiResponse, error) {
		z.counters.CountWriteOps(ops)
		return z.client().Multi(reqs...)
	})
	// Find the op that failed: the others report success or a generic
	// "runtime inconsistency" for being rolled back.
	for i, r := range res {
		if r.Error != nil && !errors.Is(r.Error, zk.ErrAPIError) && r.Error.Error() != "unknown error: -2" {
			return &regcenter.MultiError{Index: i, Op: ops[i], Err: translate(r.Error)}
		}
	}
	if err != nil {
		return fmt.Errorf("regcenter: transaction of %d ops: %w", len(ops), err)
	}
	return nil
}

// multiRequests turns ops into go-zookeeper's requests. A group-committed
// transaction holds hundreds of ops, so the requests of each kind share one
// allocation, and the full paths one string.
func (z *Center) multiRequests(ops []regcenter.Op) ([]any, error) {
	var creates, sets, deletes, checks, size int
	for _, op := range ops {
		switch op.(type) {
		case regcenter.CreateOp:
			creates++
		case regcenter.SetOp:
			sets++
		case regcenter.DeleteOp:
			deletes++
		case regcenter.CheckOp:
			checks++
		default:
			return nil, fmt.Errorf("regcenter: unknown op %T", op)
		}
		size += z.fullLen(backend.OpPath(op))
	}
	var paths strings.Builder
	paths.Grow(size)
	for _, op := range ops {
		z.writeFull(&paths, backend.OpPath(op))
	}
	all := paths.String()
	var (
		cr  = make([]zk.CreateRequest, 0, creates)
		set = make([]zk.SetDataRequest, 0, sets)
		del = make([]zk.DeleteRequest, 0, deletes)
		chk = make([]zk.CheckVersionRequest, 0, checks)
	)
	reqs := make([]any, len(ops))
	for i, op := range ops {
		n := z.fullLen(backend.OpPath(op))
		full := all[:n]
		all = all[n:]
		switch o := op.(type) {
		case regcenter.CreateOp:
			cr = append(cr, zk.CreateRequest{Path: full, Data: o.Data, Acl: z.acl, Flags: flags(o.Mode)})
			reqs[i] = &cr[len(cr)-1]
		case regcenter.SetOp:
			set = append(set, zk.SetDataRequest{Path: full, Data: o.Data, Version: o.Version})
			reqs[i] = &set[len(set)-1]
		case regcenter.DeleteOp:
			del = append(del, zk.DeleteRequest{Path: full, Version: o.Version})
			reqs[i] = &del[len(del)-1]
		case regcenter.CheckOp:
			chk = append(chk, zk.CheckVersionRequest{Path: full, Version: o.Version})
			reqs[i] = &chk[len(chk)-1]
		}
	}
	return reqs, nil
}

// fullLen is len(full(p)).
func (z *Center) fullLen(p string) int {
	switch {
	case p == "" || p == "/":
		return len(z.root)
	case !strings.HasPrefix(p, "/"):
		return len(z.root) + 1 + len(p)
	}
	return len(z.root) + len(p)
}

// writeFull writes full(p) to b.
func (z *Center) writeFull(b *strings.Builder, p string) {
	b.WriteString(z.root)
	if p == "" || p == "/" {
		return
	}
	if !strings.HasPrefix(p, "/") {
		b.WriteByte('/')
	}
	b.WriteString(p)
}

type zkLogger struct{ l *slog.Logger }

func (l zkLogger) Printf(format string, a ...any) {
	l.l.Debug("zk: " + fmt.Sprintf(format, a...))
}
