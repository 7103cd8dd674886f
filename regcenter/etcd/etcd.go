package etcd

// The tree on etcd. etcd is a flat, ordered key space with revisions,
// leases and transactions; the regcenter.Center contract is ZooKeeper's tree. Under
// the namespace root R = "/<namespace>/" each node is stored as two keys:
//
//	R n/<depth>/<path>   the node: a header (the writer's mtime; see
//	                     header in txn.go) and then its data; the
//	                     key's lease is the ephemeral owner (0:
//	                     persistent). depth is the number of path segments
//	                     in three digits, so the root is "R n/000/", /a is
//	                     "R n/001/a" and /a/b is "R n/002/a/b".
//	R c<path>            the node's meta key: its ctime and the base of
//	                     its cversion, written with the node and on the
//	                     same lease; each create and delete of a child puts
//	                     it again with its value kept.
//
// Children of /a are exactly the keys with the prefix "R n/002/a/": a range
// read over direct children only, never a prefix match (/a/1's children are
// "R n/002/a/1/...", which /a/10 is not under), and keys-only, so 10,000
// children are one cheap read. NumChildren is the same range counted.
//
// Stat comes from etcd's own counts where it can, so that the server can
// compare them inside a transaction: Version is the node key's etcd
// version less one (etcd counts the puts since the key's creation: the
// create and each Set); CVersion is the meta key's etcd version less one,
// plus the base in its value; Czxid and Mzxid are the node key's
// CreateRevision and ModRevision (ordered across the whole cluster, like
// zxids); EphemeralOwner is the lease id; Ctime (from the meta key) and
// Mtime (from the header) are the writer's clock, not the server's. A node
// deleted and created again in one transaction keeps its key (etcd allows
// one write of a key per transaction): its header then carries the version
// base and the creation revision. A sequential node's suffix is its
// parent's cversion, as on ZooKeeper: the meta key is part of the
// transaction, so two creators anywhere in the cluster never get the same
// number. Children removed by their lease's expiry do not change the
// parent's CVersion (etcd deletes them without a transaction of ours);
// they do change what Children returns and what a children watch sees.
//
// A write (Create, Set, Delete, Multi) is one transaction whose compares
// are its operations' preconditions (see txn.go): a version is a
// compare of the key's version, existence one of its create revision,
// "no children" one over its children's range. When the compares fail the
// same round trip reads what names the failing operation (ErrNoNode,
// ErrNodeExists, ErrBadVersion, ErrNotEmpty, in a *MultiError for Multi).
// The writes the server cannot check alone (a sequential create, two
// operations on one node or on the children of one parent) read their
// keys first and send a transaction that compares what they read.
//
// One etcd watch covers the namespace; its events are mapped to node and
// children events as ZooKeeper gives them, and it resumes from the revision
// after the last event it delivered whenever it has to be opened again.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/startstop"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/internal/backend"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Center is the [regcenter.Center] backed by an etcd cluster (the v3
// API). Create it with [Open], or [regcenter.Open] once this package is
// imported (package regcenter/embedded runs a member inside the process
// and gives one on it); it is safe for concurrent use.
//
// Its session is an etcd lease whose TTL is the session timeout, kept alive
// by the center. Ephemeral nodes are keys attached to that lease. The
// fencing lease of [regcenter.Session.Check] runs from the send time of
// the latest keepalive the server answered: the server cannot expire the
// lease earlier than a full TTL after it received that keepalive.
type Center struct {
	cfg  regcenter.Config
	root string // "/shop"
	pfx  string // "/shop/"
	cli  *clientv3.Client
	kv   clientv3.KV // cli's, but for the compares of write transactions (commit, txn.go)
	log  *slog.Logger

	epoch     time.Time
	lastRenew atomic.Int64 // ns since epoch: send time of the latest answered keepalive (or grant)
	// unanswered is when the latest keepalive failed for want of an
	// answer, ns since epoch (0: none has).
	unanswered atomic.Int64
	ttl        atomic.Int64 // the lease's granted TTL, ns

	// sessions holds the session (its id is the current lease's), its
	// listeners and the watchdog's wake-ups.
	sessions *regcenter.SessionKeeper
	// leaseGone: the server no longer has the current lease. Only the
	// keepalive loop (and the constructor before it) sets it.
	leaseGone atomic.Bool

	watches  *backend.WatchTable[etcdTask] // the watches and the dispatcher's queue (watch.go)
	startRev int64                         // where the namespace watch starts
	reads    chan *queuedRead              // reads queued for the reader (readgroup.go)

	// Test hooks (export_test.go).
	keepAliveOff atomic.Bool
	watchHold    atomic.Pointer[chan struct{}]
	watchKick    chan struct{}

	counters backend.Counters // the requests and keepalives sent, for regcenter.Stats and KeepAlives

	// seen is the highest revision an answer has shown this client: every
	// node it names was created at or before it (txn.go, latePlan).
	seen atomic.Int64

	// leaseDoubt wakes the keepalive loop at once: a request was answered
	// that the lease is gone (leaseGoneAnswer).
	leaseDoubt chan struct{}

	// life is cancelled by Close; every request's context ends with it.
	life    context.Context
	endLife context.CancelFunc
	// group owns the center's goroutines; done is its context's Done,
	// closed when Close begins.
	group *startstop.Group
	done  <-chan struct{}
}

var _ regcenter.Center = (*Center)(nil)

// etcdTask is work for the watch dispatcher besides the stream's events.
type etcdTask struct {
	resyncAll bool
	key       backend.WatchKey
	sub       *backend.WatchSub
}

// etcdMaxRequestBytes is etcd's default request limit (--max-request-bytes);
// etcdRequestSlack is kept free of data in every transaction.
const (
	etcdMaxRequestBytes = 1536 << 10
	etcdRequestSlack    = 4 << 10
	// etcdMaxDepth is the deepest node the key layout encodes.
	etcdMaxDepth = 999
	// etcdReadBatch bounds the reads of one read transaction: etcd's
	// default --max-txn-ops is 128.
	etcdReadBatch = 120
	// etcdConflictRetries bounds how often a write starts over after what
	// it read changed before its transaction.
	etcdConflictRetries = 200
)

func init() {
	regcenter.RegisterBackend(regcenter.BackendEtcd, func(ctx context.Context, cfg regcenter.Config, opts ...regcenter.Option) (regcenter.Center, error) {
		e, err := Open(ctx, cfg, opts...)
		if err != nil {
			return nil, err // not a nil *Center in a non-nil regcenter.Center
		}
		return e, nil
	})
}

// Open connects to the etcd cluster at cfg.Etcd (or to the embedded
// member in cfg.EmbeddedDir) and returns once a lease (the session) is
// granted and the namespace root exists and is accessible. It fails with
// [regcenter.ErrInvalidConfig] for a bad config (Etcd or EmbeddedDir must
// be set), [regcenter.ErrUnreachable] when no endpoint answers within
// cfg.ConnectTimeout (or ctx ends first), [regcenter.ErrTLS] when the TLS
// handshake fails, and [regcenter.ErrUnauthorized] when the user and
// password (cfg.Digest or cfg.DigestFile, "user:password") are refused or
// may not use the namespace's keys.
func Open(ctx context.Context, cfg regcenter.Config, opts ...regcenter.Option) (*Center, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Etcd) == 0 && cfg.EmbeddedDir == "" {
		return nil, fmt.Errorf("%w: etcd: at least one endpoint host:port is required (or embeddedDir; servers and url name other registries: open them with regcenter.Open)", regcenter.ErrInvalidConfig)
	}
	embeddedDir := cfg.EmbeddedDir
	if embeddedDir != "" {
		// The member's endpoint and credentials, from its directory.
		var err error
		if cfg, err = resolveEmbedded(cfg); err != nil {
			return nil, err
		}
	}
	cfg, logger, tlsCfg, err := backend.Settle(cfg, opts)
	if err != nil {
		return nil, err
	}
	endpoints := make([]string, len(cfg.Etcd))
	for i, s := range cfg.Etcd {
		endpoints[i] = strings.TrimSpace(s)
	}
	ccfg := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: cfg.ConnectTimeout,
		// Keep the connection probed, so a dead member is left for
		// another within the session timeout.
		DialKeepAliveTime:    max(cfg.SessionTimeout/3, time.Second),
		DialKeepAliveTimeout: max(cfg.SessionTimeout/3, time.Second),
		TLS:                  tlsCfg,
		Logger:               zap.NewNop(),
		MaxCallSendMsgSize:   etcdMaxRequestBytes + 64<<10,
	}
	if tlsCfg != nil {
		ccfg.TLS = tlsCfg.Clone()
		// The client's own credentials would verify each endpoint's host
		// even when a server name is configured; these verify that name.
		ccfg.DialOptions = append(ccfg.DialOptions, grpc.WithTransportCredentials(etcdCredentials(ccfg.TLS)))
	}
	if embeddedDir != "" {
		ccfg.DialOptions = append(ccfg.DialOptions, followEmbedded(embeddedDir)...)
	}
	var user string
	if cfg.Digest != "" {
		var pass string
		user, pass, _ = strings.Cut(cfg.Digest, ":")
		ccfg.Username, ccfg.Password = user, pass
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	ccfg.Context = context.WithoutCancel(ctx)
	where := strings.Join(endpoints, ",")
	cli, err := clientv3.New(ccfg)
	if err != nil {
		return nil, connectError(where, user, cfg.ConnectTimeout, err)
	}
	e := &Center{
		cfg:        cfg,
		root:       "/" + cfg.Namespace,
		pfx:        "/" + cfg.Namespace + "/",
		cli:        cli,
		kv:         clientv3.NewKVFromKVClient(compareKV{clientv3.RetryKVClient(cli)}, cli),
		log:        logger.With("component", "regcenter", "backend", "etcd"),
		epoch:      time.Now(),
		watches:    backend.NewWatchTable[etcdTask](),
		watchKick:  make(chan struct{}, 1),
		reads:      make(chan *queuedRead),
		leaseDoubt: make(chan struct{}, 1),
		group:      startstop.New(ctx),
	}
	e.sessions = regcenter.NewSessionKeeper(e.log, regcenter.BackendEtcd, leaseClock{e})
	e.done = e.group.Context().Done()
	e.life, e.endLife = context.WithCancel(context.Background())
	e.ttl.Store(int64(cfg.SessionTimeout))
	fail := func(err error) (*Center, error) {
		e.endLife()
		cli.Close()
		return nil, connectError(where, user, cfg.ConnectTimeout, err)
	}
	// The first lease: the session. A probe of the endpoints runs
	// alongside, because the client retries a failed TLS handshake until
	// the deadline and then reports only the deadline: a failure the
	// probe is sure of ends the wait at once, with its reason.
	gctx, endGrant := context.WithCancelCause(cctx)
	defer endGrant(nil)
	pctx, endProbe := context.WithCancel(cctx)
	defer endProbe()
	probed := make(chan error, 1)
	go func() {
		perr, sure := probeEtcd(pctx, endpoints, tlsCfg)
		if sure {
			endGrant(perr)
		}
		probed <- perr
	}()
	sent := time.Since(e.epoch)
	grant, err := cli.Grant(gctx, ttlSeconds(cfg.SessionTimeout))
	e.counters.Writes.Add(1)
	endProbe()
	perr := <-probed
	if err != nil {
		if perr != nil && !errors.Is(translateEtcd(err), regcenter.ErrUnauthorized) {
			e.endLife()
			cli.Close()
			return nil, fmt.Errorf("%w: etcd at %s: %w", regcenter.ErrUnreachable, where, perr)
		}
		return fail(err)
	}
	e.renewed(sent)
	e.ttl.Store(int64(time.Duration(grant.TTL) * time.Second))
	e.started(e.sessions.Established(int64(grant.ID)))

	rev, err := e.ensureRoot(cctx)
	if err != nil {
		// Revoke the lease before giving up: nothing may outlive a failed
		// constructor.
		_, _ = cli.Revoke(context.WithoutCancel(cctx), grant.ID) // best effort; the lease expires anyway
		if errors.Is(err, regcenter.ErrUnauthorized) {
			e.endLife()
			cli.Close()
			if user == "" {
				return nil, fmt.Errorf("%w: namespace %s: etcd requires authentication and no user is configured", regcenter.ErrUnauthorized, e.root)
			}
			return nil, fmt.Errorf("%w: etcd user %q may not use namespace %s: %w", regcenter.ErrUnauthorized, user, e.root, err)
		}
		return fail(err)
	}
	e.startRev = rev + 1
	// A new group refuses nothing; were it to, Close stops what started.
	if err := errors.Join(e.group.Go(e.keepAliveLoop), e.group.Go(e.watchdog), e.group.Go(e.sessions.Run), e.group.Go(e.watchLoop), e.group.Go(e.readLoop)); err != nil {
		return nil, errors.Join(err, e.Close())
	}
	return e, nil
}

// connectError explains why no session could be had.
func connectError(where, user string, timeout time.Duration, err error) error {
	err = translateEtcd(err)
	switch {
	case errors.Is(err, regcenter.ErrUnauthorized) && user == "":
		return fmt.Errorf("%w: etcd at %s requires authentication and no user is configured (digest or digestFile; for an embedded member, embeddedDir names its directory, which holds its credentials): %w", regcenter.ErrUnauthorized, where, err)
	case errors.Is(err, regcenter.ErrUnauthorized):
		return fmt.Errorf("%w: etcd at %s refused user %q: %w", regcenter.ErrUnauthorized, where, user, err)
	case isTLSError(err):
		return fmt.Errorf("%w: etcd at %s: %w", regcenter.ErrTLS, where, err)
	case errors.Is(err, regcenter.ErrConnectionLoss), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: no lease from etcd at %s within %v: %w", regcenter.ErrUnreachable, where, timeout, err)
	}
	return fmt.Errorf("regcenter: etcd at %s: %w", where, err)
}

func isTLSError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "x509:") || strings.Contains(s, "tls:") || strings.Contains(s, "handshake")
}

// ttlSeconds is d in whole seconds, rounded up: etcd's TTLs are seconds.
func ttlSeconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}

// ensureRoot creates the namespace root if needed and proves the namespace
// is readable and writable, returning the revision it read at.
func (e *Center) ensureRoot(ctx context.Context) (int64, error) {
	if err := e.createRoot(ctx); err != nil {
		return 0, err
	}
	probe := "/.access-check"
	if _, err := e.Create(ctx, probe, nil, regcenter.Ephemeral); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return 0, err
	}
	if err := e.Delete(ctx, probe, -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return 0, err
	}
	resp, err := e.cli.Get(ctx, e.nodeKey("/"), clientv3.WithCountOnly())
	e.counters.Reads.Add(1)
	if err != nil {
		return 0, e.counters.Counted(translateEtcd(err))
	}
	e.see(resp.Header.Revision)
	return resp.Header.Revision, nil
}

// see raises e.seen to rev.
func (e *Center) see(rev int64) {
	for {
		old := e.seen.Load()
		if rev <= old || e.seen.CompareAndSwap(old, rev) {
			return
		}
	}
}

// createRoot creates the namespace root where it is missing.
func (e *Center) createRoot(ctx context.Context) error {
	k := e.nodeKey("/")
	ctx, cancel := e.reqCtx(ctx)
	defer cancel()
	now := time.Now().UnixMilli()
	_, err := e.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, header{mtime: now}.encode(nil)), clientv3.OpPut(e.metaKey("/"), encodeMeta(now, 0, 1))).Commit()
	e.counters.Writes.Add(1)
	return e.counters.Counted(translateEtcd(err))
}

// Namespace returns the namespace root, e.g. "/shop".
func (e *Center) Namespace() string { return e.root }

// SessionTimeout returns the lease's TTL as granted by etcd.
func (e *Center) SessionTimeout() time.Duration { return time.Duration(e.ttl.Load()) }

// Client returns the etcd client the center uses, for tools that need the
// raw key space (an operator's dump, a test's compaction). Writes through
// it bypass the tree's invariants.
func (e *Center) Client() *clientv3.Client { return e.cli }

// ---- keys ----

// clean returns p as an absolute node path, or an error naming it.
func cleanPath(p string) (string, error) {
	p, err := backend.CleanPath(p)
	if err == nil && depth(p) > etcdMaxDepth {
		return "", fmt.Errorf("regcenter: path %q is deeper than %d levels", p, etcdMaxDepth)
	}
	return p, err
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

func parentOf(p string) string { return path.Dir(p) }

func (e *Center) nodeKey(p string) string { return e.depthKey(depth(p), p, "") }

// childPrefix is the prefix of the keys of p's direct children.
func (e *Center) childPrefix(p string) string {
	if p == "/" {
		return e.pfx + "n/001/"
	}
	return e.depthKey(depth(p)+1, p, "/")
}

// depthKey is pfx "n/" d p tail, d in three digits (at least), in one
// allocation: every request names keys this way, thousands in a large
// transaction.
func (e *Center) depthKey(d int, p, tail string) string {
	if d < 0 || d > 999 {
		return e.pfx + "n/" + fmt.Sprintf("%03d", d) + p + tail
	}
	var b strings.Builder
	b.Grow(len(e.pfx) + 5 + len(p) + len(tail))
	b.WriteString(e.pfx)
	b.WriteString("n/")
	b.WriteByte(byte('0' + d/100))
	b.WriteByte(byte('0' + d/10%10))
	b.WriteByte(byte('0' + d%10))
	b.WriteString(p)
	b.WriteString(tail)
	return b.String()
}

// metaKey is the key of p's creation time and children version.
func (e *Center) metaKey(p string) string { return e.pfx + "c" + p }

// pathOfNodeKey returns the node path of a node key, and false for any
// other key.
func (e *Center) pathOfNodeKey(k string) (string, bool) {
	rest, ok := strings.CutPrefix(k, e.pfx+"n/")
	if !ok || len(rest) < 4 || rest[3] != '/' {
		return "", false
	}
	return rest[3:], true
}

// ---- the session: a lease kept alive ----

func (e *Center) renewed(sent time.Duration) {
	for {
		cur := e.lastRenew.Load()
		if int64(sent) <= cur || e.lastRenew.CompareAndSwap(cur, int64(sent)) {
			return
		}
	}
}

func (e *Center) sinceRead() time.Duration {
	return time.Since(e.epoch) - time.Duration(e.lastRenew.Load())
}

// leaseDuration is how long after the send time of the latest answered
// keepalive the lease is trusted: two thirds of its TTL. etcd cannot
// expire it earlier than a full TTL after it received that keepalive.
func (e *Center) leaseDuration() time.Duration { return time.Duration(e.ttl.Load()) * 2 / 3 }

func (e *Center) leaseLeft() time.Duration { return e.leaseDuration() - e.sinceRead() }

// leaseClock is e's lease clock, for its SessionKeeper.
type leaseClock struct{ e *Center }

func (c leaseClock) LeaseLeft() time.Duration     { return c.e.leaseLeft() }
func (c leaseClock) SinceRead() time.Duration     { return c.e.sinceRead() }
func (c leaseClock) LeaseDuration() time.Duration { return c.e.leaseDuration() }
func (leaseClock) Backend() string                { return "etcd" }

// started follows a session change of the hub's: a session that started
// has the lease the server holds, and one after the first makes every
// watch resync, as changes may have been missed while there was none.
func (e *Center) started(c regcenter.SessionChange) {
	if c == regcenter.SessionKept {
		return
	}
	e.leaseGone.Store(false)
	if c == regcenter.SessionNext {
		e.enqueue(etcdTask{resyncAll: true})
	}
}

// keepAliveLoop renews the lease every fifth of its TTL, one keepalive at a
// time, and renews the fencing lease from each answered keepalive's send
// time. A keepalive that fails for want of an answer suspends the session
// and is sent again at once (keepAliveRetry): the client's next request
// goes to another member, so that a member that stopped answering with its
// connection open (frozen, or cut off from its peers) costs one keepalive's
// timeout, not the fencing lease. One the server answers "no such lease"
// ends the session, and a new lease is then granted: a new session. It
// ends with ctx.
func (e *Center) keepAliveLoop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-e.leaseDoubt:
			timer.Stop() // reset below; no stale tick survives Stop since Go 1.23
		}
		next := max(time.Duration(e.ttl.Load())/5, 50*time.Millisecond)
		if !e.keepAliveOnce() {
			next = keepAliveRetry
		}
		timer.Reset(next)
	}
}

// keepAliveRetry is the pause before a failed keepalive is sent again.
const keepAliveRetry = 50 * time.Millisecond

// keepAliveOnce sends one keepalive (or asks for a new lease after the old
// one expired) and reports whether it was answered. Each waits at most a
// fifth of the TTL: with the send a fifth after the last answer, two
// unanswered attempts and a third answered one still fit in the fencing
// lease's two thirds.
func (e *Center) keepAliveOnce() bool {
	s := e.sessions.Current()
	lease, gone := clientv3.LeaseID(s.ID()), e.leaseGone.Load()
	ttl := time.Duration(e.ttl.Load())
	ctx, cancel := context.WithTimeout(e.life, max(ttl/5, 200*time.Millisecond))
	defer cancel()
	if gone {
		return e.grantNew(ctx)
	}
	if e.keepAliveOff.Load() {
		return true
	}
	sent := time.Since(e.epoch)
	resp, err := e.cli.KeepAliveOnce(ctx, lease)
	e.counters.KeepAlives.Add(1)
	if err == nil && resp.TTL <= 0 {
		err = rpctypes.ErrLeaseNotFound
	}
	if e.sessions.Closing() {
		return true
	}
	switch {
	case err == nil:
		e.renewed(sent)
		// A live session goes on (reconnected if it was suspended). One
		// whose fencing lease lapsed locally while the server kept the
		// lease (its keys are still ours) is followed by a new session
		// under the same lease, as ZooKeeper's client does after a lapse.
		e.started(e.sessions.Established(int64(lease)))
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		e.leaseGone.Store(true)
		e.sessions.Lose(fmt.Errorf("%w: lease %x expired in etcd", regcenter.ErrSessionLost, int64(lease)))
		e.sessions.Wake()
	default:
		e.counters.Errs.Add(1)
		e.unanswered.Store(int64(time.Since(e.epoch)))
		e.sessions.Suspend("etcd keepalive failed; firing suspended", "err", err)
		return false
	}
	return true
}

// grantNew asks for a new lease after the old one expired, and starts a new
// session on it. It reports whether etcd granted one.
func (e *Center) grantNew(ctx context.Context) bool {
	sent := time.Since(e.epoch)
	resp, err := e.cli.Grant(ctx, ttlSeconds(e.cfg.SessionTimeout))
	e.counters.Writes.Add(1)
	if err != nil {
		e.counters.Errs.Add(1)
		e.log.Debug("granting a new etcd lease", "err", err)
		return false
	}
	if e.sessions.Closing() {
		return true
	}
	e.renewed(sent)
	e.ttl.Store(int64(time.Duration(resp.TTL) * time.Second))
	e.started(e.sessions.Established(int64(resp.ID)))
	return true
}

// watchdog ends the session when its fencing lease lapses on the
// monotonic clock, whether or not a renewal is outstanding. It ends with
// ctx.
func (e *Center) watchdog(ctx context.Context) {
	e.sessions.WatchLease(ctx, e.leaseLeft, "no keepalive answered by etcd")
}

// Session returns the current session.
func (e *Center) Session() *regcenter.Session { return e.sessions.Current() }

// OnSession registers fn for session events. Events are delivered in order
// on one goroutine; fn should return quickly.
func (e *Center) OnSession(fn func(regcenter.SessionEvent)) (cancel func()) {
	return e.sessions.Subscribe(fn)
}

// Stats returns the requests sent so far. The lease's keepalives are the
// session's upkeep, as ZooKeeper's pings are, and are not requests:
// [Center.KeepAlives] counts them (a keepalive that failed for want of an
// answer still counts in Errors). Granting a lease is a write.
func (e *Center) Stats() regcenter.Stats { return e.counters.Stats(regcenter.BackendEtcd) }

// KeepAlives returns the number of lease keepalives sent so far, one every
// fifth of the lease's TTL while the session is well.
func (e *Center) KeepAlives() int64 { return e.counters.KeepAlives.Load() }

// Close revokes the lease (its ephemeral nodes are removed at once), stops
// the center's goroutines and closes the client. It is idempotent.
func (e *Center) Close() error {
	s, ok := e.sessions.Close()
	if !ok {
		return nil
	}
	lease := clientv3.LeaseID(s.ID())
	e.group.Close()
	e.group.Cancel(regcenter.ErrClosed) // closes e.done
	e.endLife()
	// No deadline: the loops' requests end with life, and a Wait on a
	// context that never ends returns nil.
	werr := e.group.Wait(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.ConnectTimeout)
	defer cancel()
	_, rerr := e.cli.Revoke(ctx, lease)
	e.counters.Writes.Add(1)
	cerr := e.cli.Close()
	if rerr != nil && !errors.Is(rerr, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("regcenter: closing: revoking lease %x: %w", int64(lease), translateEtcd(rerr))
	}
	if cerr != nil && !errors.Is(cerr, context.Canceled) {
		return fmt.Errorf("regcenter: closing the etcd client: %w", cerr)
	}
	return werr
}

// ---- requests ----

// reqCtx bounds one request: by ctx, by the center's closing, and by the
// session timeout (gRPC waits for a connection otherwise, where ZooKeeper
// fails the request when its connection drops).
func (e *Center) reqCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeoutCause(ctx, e.cfg.SessionTimeout, errRequestTimeout)
	stop := context.AfterFunc(e.life, cancel)
	return ctx, func() { stop(); cancel() }
}

var (
	errRequestTimeout = errors.New("no answer within the session timeout")
	errRequestStalled = errors.New("no answer while the session's keepalives went unanswered too; abandoned to be sent again through another member")
)

// stallAfter is how long a request may go without an answer before a
// keepalive that went unanswered meanwhile has it abandoned: the time a
// keepalive waits.
func (e *Center) stallAfter() time.Duration {
	return max(time.Duration(e.ttl.Load())/5, 200*time.Millisecond)
}

// abandonWhenStalled calls abandon(errRequestStalled) once a request sent
// at sent (since epoch) has had no answer for stallAfter and a keepalive
// has failed for want of an answer since it was sent. A member that stops
// answering with its connection open (frozen, or a leader that lost its
// quorum) holds every request that reaches it, and a follower forwards
// writes to its leader, frozen or not, until the request's deadline, the
// session timeout: the others may have elected a new leader long before,
// and the session may not outlive a second attempt after that deadline.
// The keepalives tell: the first that goes unanswered suspends the
// session. An abandoned request's outcome is unknown, as for any without
// an answer (ErrConnectionLoss); its caller's next attempt goes to another
// member. The returned stop ends the watch.
func (e *Center) abandonWhenStalled(sent time.Duration, abandon context.CancelCauseFunc) (stop func()) {
	var mu sync.Mutex
	stopped := false
	mu.Lock()
	defer mu.Unlock()
	var t *time.Timer
	t = time.AfterFunc(e.stallAfter(), func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if time.Duration(e.unanswered.Load()) >= sent {
			abandon(errRequestStalled)
			return
		}
		t.Reset(keepAliveRetry)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// do runs one request f under a bounded context, counts it and translates
// its error.
func (e *Center) do(ctx context.Context, counter *atomic.Int64, f func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-e.done:
		return regcenter.ErrClosed
	default:
	}
	counter.Add(1)
	sent := time.Since(e.epoch)
	tctx, cancel := e.reqCtx(ctx)
	defer cancel()
	rctx, abandon := context.WithCancelCause(tctx)
	defer abandon(nil)
	stop := e.abandonWhenStalled(sent, abandon)
	err := f(rctx)
	stop()
	if err == nil {
		return nil
	}
	select {
	case <-e.done:
		return e.counters.Counted(regcenter.ErrClosed)
	default:
	}
	if ctx.Err() != nil {
		return e.counters.Counted(ctx.Err())
	}
	if cause := context.Cause(rctx); errors.Is(cause, errRequestTimeout) || errors.Is(cause, errRequestStalled) {
		return e.counters.Counted(fmt.Errorf("%w: %v", regcenter.ErrConnectionLoss, cause))
	}
	err = translateEtcd(err)
	if errors.Is(err, regcenter.ErrSessionLost) {
		e.leaseGoneAnswer()
	}
	return e.counters.Counted(err)
}

// leaseGoneAnswer follows a request answered that its lease is gone (etcd
// revoked it: expired, or revoked by a leader as it resumed from a
// freeze): the keepalive loop sends its next keepalive at once, and ends
// the session if etcd says the same of it, rather than a fifth of the TTL
// later. Meanwhile every request under the lease fails the same way, and
// callers that retry (a make-up run owed again) would retry in a loop. The
// keepalive decides, not the request: the request may have carried an
// earlier session's lease.
func (e *Center) leaseGoneAnswer() {
	select {
	case e.leaseDoubt <- struct{}{}:
	default:
	}
}

// retryingRead runs an idempotent read with backoff on connection errors.
func (e *Center) retryingRead(ctx context.Context, f func(ctx context.Context) error) error {
	return e.retry(ctx, func() error { return e.do(ctx, &e.counters.Reads, f) })
}

// retry calls an idempotent read until it succeeds, fails otherwise than
// by a lost connection, or has been retried MaxRetries times, with backoff
// between calls.
func (e *Center) retry(ctx context.Context, read func() error) error {
	sleep := e.cfg.BaseSleep
	for attempt := 0; ; attempt++ {
		err := read()
		if err == nil || !errors.Is(err, regcenter.ErrConnectionLoss) || attempt >= e.cfg.MaxRetries {
			return err
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-e.done:
			t.Stop()
			return regcenter.ErrClosed
		case <-t.C:
		}
		sleep = min(sleep*2, e.cfg.MaxSleep)
	}
}

// translateEtcd maps etcd's errors to this package's sentinels.
func translateEtcd(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, clientv3.ErrNoAvailableEndpoints) {
		return fmt.Errorf("%w: %v", regcenter.ErrConnectionLoss, err)
	}
	ev := rpctypes.Error(err)
	switch {
	case errors.Is(ev, rpctypes.ErrLeaseNotFound):
		return fmt.Errorf("%w: the lease is gone in etcd", regcenter.ErrSessionLost)
	case errors.Is(ev, rpctypes.ErrPermissionDenied), errors.Is(ev, rpctypes.ErrAuthFailed),
		errors.Is(ev, rpctypes.ErrUserEmpty), errors.Is(ev, rpctypes.ErrInvalidAuthToken),
		errors.Is(ev, rpctypes.ErrUserNotFound), errors.Is(ev, rpctypes.ErrAuthOldRevision):
		return fmt.Errorf("%w: %v", regcenter.ErrUnauthorized, ev)
	case errors.Is(ev, rpctypes.ErrTooManyOps):
		return fmt.Errorf("%w: %v (raise the cluster's --max-txn-ops)", regcenter.ErrTooLarge, ev)
	case errors.Is(ev, rpctypes.ErrRequestTooLarge):
		return fmt.Errorf("%w: %v", regcenter.ErrTooLarge, ev)
	case errors.Is(ev, rpctypes.ErrNoLeader), errors.Is(ev, rpctypes.ErrNotLeader), errors.Is(ev, rpctypes.ErrLeaderChanged),
		errors.Is(ev, rpctypes.ErrStopped), errors.Is(ev, rpctypes.ErrTimeout), errors.Is(ev, rpctypes.ErrTimeoutDueToLeaderFail),
		errors.Is(ev, rpctypes.ErrTimeoutDueToConnectionLost), errors.Is(ev, rpctypes.ErrTimeoutWaitAppliedIndex),
		errors.Is(ev, rpctypes.ErrUnhealthy), errors.Is(ev, rpctypes.ErrTooManyRequests):
		return fmt.Errorf("%w: %v", regcenter.ErrConnectionLoss, ev)
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted:
			return fmt.Errorf("%w: %v", regcenter.ErrConnectionLoss, err)
		case codes.Unauthenticated, codes.PermissionDenied:
			return fmt.Errorf("%w: %v", regcenter.ErrUnauthorized, err)
		case codes.Canceled:
			return fmt.Errorf("%w: %v", regcenter.ErrConnectionLoss, err)
		}
	}
	return err
}

// ---- reads ----

// statOps reads what a node's Stat needs: the node, its meta key, its
// number of children.
func (e *Center) statOps(p string) []clientv3.Op { return e.appendStatOps(nil, p) }

// appendStatOps appends statOps(p) to dst.
func (e *Center) appendStatOps(dst []clientv3.Op, p string) []clientv3.Op {
	cp := e.childPrefix(p)
	return append(dst,
		clientv3.OpGet(e.nodeKey(p)),
		clientv3.OpGet(e.metaKey(p)),
		clientv3.OpGet(cp, clientv3.WithPrefix(), clientv3.WithCountOnly()))
}

// statOf builds a Stat from the three answers of statOps (starting at
// rs[0]); ok is false when the node does not exist.
func statOf(rs []*etcdRange) (data []byte, st regcenter.Stat, ok bool) {
	if len(rs[0].kvs) == 0 {
		return nil, regcenter.Stat{}, false
	}
	var meta *mvccpb.KeyValue
	if len(rs[1].kvs) > 0 {
		meta = rs[1].kvs[0]
	}
	data, st = statFromKV(rs[0].kvs[0], meta, rs[2].count)
	return data, st, true
}

// etcdRange is one range answer of a transaction.
type etcdRange struct {
	kvs   []*mvccpb.KeyValue
	count int64
}

func ranges(resp *clientv3.TxnResponse) []*etcdRange {
	out := make([]*etcdRange, 0, len(resp.Responses))
	for _, r := range resp.Responses {
		if rr := r.GetResponseRange(); rr != nil {
			out = append(out, &etcdRange{kvs: rr.Kvs, count: rr.Count})
		}
	}
	return out
}

// readTxn runs ops (reads) as one transaction.
func (e *Center) readTxn(ctx context.Context, ops ...clientv3.Op) ([]*etcdRange, int64, error) {
	var rs []*etcdRange
	var rev int64
	err := e.retryingRead(ctx, func(ctx context.Context) error {
		resp, err := e.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return err
		}
		rs, rev = ranges(resp), resp.Header.Revision
		e.see(rev)
		return nil
	})
	return rs, rev, err
}

// Get returns a node's data and stat, read in a group with the other
// reads waiting (readgroup.go).
func (e *Center) Get(ctx context.Context, p string) ([]byte, regcenter.Stat, error) {
	cp, err := cleanPath(p)
	if err != nil {
		return nil, regcenter.Stat{}, err
	}
	r := &queuedRead{path: cp}
	if err := e.groupedRead(ctx, r); err != nil {
		return nil, regcenter.Stat{}, backend.WrapPath("get", p, err)
	}
	if !r.st.Exists {
		return nil, regcenter.Stat{}, backend.WrapPath("get", p, regcenter.ErrNoNode)
	}
	return r.data, r.st.Stat, nil
}

// GetMany reads several nodes' data and stats, one read transaction per
// batch of paths (see regcenter.Center.GetMany): each node's statOps, so
// etcdReadBatch / 3 nodes a transaction, all of a batch at one revision.
func (e *Center) GetMany(ctx context.Context, paths ...string) ([]regcenter.NodeData, error) {
	clean := make([]string, len(paths))
	for i, p := range paths {
		cp, err := cleanPath(p)
		if err != nil {
			return nil, err
		}
		clean[i] = cp
	}
	out := make([]regcenter.NodeData, 0, len(paths))
	for _, batch := range backend.ReadBatches(clean, etcdReadBatch/3, etcdMaxRequestBytes-etcdRequestSlack) {
		var ops []clientv3.Op
		for _, p := range batch {
			ops = e.appendStatOps(ops, p)
		}
		rs, _, err := e.readTxn(ctx, ops...)
		if err == nil && len(rs) != len(ops) {
			err = regcenter.ErrConnectionLoss // not what was asked: nothing is known
		}
		if err != nil {
			return nil, backend.WrapPath("get", paths[len(out)], err)
		}
		for range batch {
			data, st, ok := statOf(rs)
			if ok && data == nil {
				data = []byte{}
			}
			out = append(out, regcenter.NodeData{Exists: ok, Data: data, Stat: st})
			rs = rs[3:]
		}
	}
	return out, nil
}

// Exists reports whether a node exists, read in a group with the other
// reads waiting (readgroup.go).
func (e *Center) Exists(ctx context.Context, p string) (bool, regcenter.Stat, error) {
	cp, err := cleanPath(p)
	if err != nil {
		return false, regcenter.Stat{}, err
	}
	r := &queuedRead{path: cp}
	if err := e.groupedRead(ctx, r); err != nil {
		return false, regcenter.Stat{}, backend.WrapPath("exists", p, err)
	}
	return r.st.Exists, r.st.Stat, nil
}

// appendChildrenOps appends to dst the reads of whether p exists and of
// its children's keys.
func (e *Center) appendChildrenOps(dst []clientv3.Op, p string) []clientv3.Op {
	return append(dst,
		clientv3.OpGet(e.nodeKey(p), clientv3.WithCountOnly()),
		clientv3.OpGet(e.childPrefix(p), clientv3.WithPrefix(), clientv3.WithKeysOnly()))
}

func (e *Center) childNames(p string, r *etcdRange) []string {
	cp := e.childPrefix(p)
	out := make([]string, 0, len(r.kvs))
	for _, kv := range r.kvs {
		out = append(out, string(kv.Key[len(cp):]))
	}
	return out
}

// Children lists a node's children: one keys-only range over exactly its
// direct children, in a group with the other reads waiting (readgroup.go).
func (e *Center) Children(ctx context.Context, p string) ([]string, error) {
	cp, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	r := &queuedRead{path: cp, children: true}
	if err := e.groupedRead(ctx, r); err != nil {
		return nil, backend.WrapPath("children", p, err)
	}
	if !r.st.Exists {
		return nil, backend.WrapPath("children", p, regcenter.ErrNoNode)
	}
	return r.st.Children, nil
}

// ---- writes ----

// Create creates a node, creating missing parents as persistent nodes.
func (e *Center) Create(ctx context.Context, p string, data []byte, mode regcenter.Mode) (string, error) {
	if err := backend.CheckNodeSize(backend.MaxNodeBytes(e.cfg), "create", p, data); err != nil {
		return "", err
	}
	cp, err := cleanPath(p)
	if err != nil {
		return "", err
	}
	if cp == "/" {
		return "", backend.WrapPath("create", p, regcenter.ErrNodeExists)
	}
	op := regcenter.CreateOp{Path: cp, Data: data, Mode: mode}
	res, err := e.txn(ctx, &e.counters.Writes, []regcenter.Op{op}, nil)
	if errors.Is(err, regcenter.ErrNoNode) {
		if perr := e.createParents(ctx, parentOf(cp)); perr != nil {
			return "", backend.WrapPath("create", p, perr)
		}
		res, err = e.txn(ctx, &e.counters.Writes, []regcenter.Op{op}, nil)
	}
	if err != nil {
		return "", backend.WrapPath("create", p, unwrapMulti(err))
	}
	return res.created[0], nil
}

func unwrapMulti(err error) error {
	var me *regcenter.MultiError
	if errors.As(err, &me) {
		return me.Err
	}
	return err
}

// EnsurePath creates p and its parents as empty persistent nodes where
// missing.
func (e *Center) EnsurePath(ctx context.Context, p string) error {
	if ok, _, err := e.Exists(ctx, p); err == nil && ok {
		return nil
	}
	cp, err := cleanPath(p)
	if err != nil {
		return err
	}
	return e.createParents(ctx, cp)
}

func (e *Center) createParents(ctx context.Context, dir string) error {
	if dir == "/" || dir == "." || dir == "" {
		return e.createRoot(ctx)
	}
	parts := strings.Split(strings.Trim(dir, "/"), "/")
	cur := ""
	for i, part := range parts {
		cur += "/" + part
		op := regcenter.CreateOp{Path: cur}
		_, err := e.txn(ctx, &e.counters.Writes, []regcenter.Op{op}, nil)
		if i == 0 && errors.Is(err, regcenter.ErrNoNode) {
			if err := e.createRoot(ctx); err != nil {
				return err
			}
			_, err = e.txn(ctx, &e.counters.Writes, []regcenter.Op{op}, nil)
		}
		if err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
			return unwrapMulti(err)
		}
	}
	return nil
}

// Set writes a node's data.
func (e *Center) Set(ctx context.Context, p string, data []byte, version int32) (regcenter.Stat, error) {
	if err := backend.CheckNodeSize(backend.MaxNodeBytes(e.cfg), "set", p, data); err != nil {
		return regcenter.Stat{}, err
	}
	cp, err := cleanPath(p)
	if err != nil {
		return regcenter.Stat{}, err
	}
	res, err := e.txn(ctx, &e.counters.Writes, []regcenter.Op{regcenter.SetOp{Path: cp, Data: data, Version: version}}, e.statOps(cp))
	if err != nil {
		return regcenter.Stat{}, backend.WrapPath("set", p, unwrapMulti(err))
	}
	_, st, _ := statOf(res.reads)
	return st, nil
}

// Delete removes a node.
func (e *Center) Delete(ctx context.Context, p string, version int32) error {
	cp, err := cleanPath(p)
	if err != nil {
		return err
	}
	_, err = e.txn(ctx, &e.counters.Writes, []regcenter.Op{regcenter.DeleteOp{Path: cp, Version: version}}, nil)
	return backend.WrapPath("delete", p, unwrapMulti(err))
}

// DeleteTree removes a node and its descendants, deepest first.
func (e *Center) DeleteTree(ctx context.Context, p string) error {
	return backend.DeleteTree(ctx, e, p)
}

// Multi applies ops atomically, as one etcd transaction.
func (e *Center) Multi(ctx context.Context, ops ...regcenter.Op) error {
	if len(ops) == 0 {
		return nil
	}
	if err := backend.CheckMultiSize(backend.MaxNodeBytes(e.cfg), ops); err != nil {
		return err
	}
	clean, err := backend.CleanOps(ops, cleanPath)
	if err != nil {
		return err
	}
	e.counters.CountWriteOps(ops)
	_, err = e.txn(ctx, &e.counters.Multis, clean, nil)
	if err != nil {
		var me *regcenter.MultiError
		if errors.As(err, &me) {
			me.Op = ops[me.Index] // as the caller wrote it
			return me
		}
		return fmt.Errorf("regcenter: transaction of %d ops: %w", len(ops), err)
	}
	return nil
}
