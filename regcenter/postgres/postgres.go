// Package postgres is a [regcenter.Center] on PostgreSQL, for sites that
// run PostgreSQL and neither ZooKeeper nor etcd. Importing it registers the
// "postgres" and "postgresql" URL schemes with [regcenter.Open]:
//
//	import _ "github.com/shardjob/shardjob/regcenter/postgres"
//
//	rc, err := regcenter.Open(ctx, regcenter.Config{
//		URL:        "postgres://shardjob@db.example:5432/jobs?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem",
//		DigestFile: "/run/secrets/shardjob-db", // user:password
//	})
//
// Only the programs that import it link pgx.
//
// # The tree
//
// Nodes are rows keyed by (namespace, path), with their parent's path for
// Children, their data, version, cversion, number of children, ephemeral
// owner (a session id), creating and last modifying revisions (Czxid,
// Mzxid) and the server's clock at creation and last modification (Ctime,
// Mtime). Every write is one call of a PL/pgSQL function that applies its
// operations in order inside one statement and one transaction: the
// operations' versions and existence are checked by the server as it
// applies them, and the first that fails raises an error naming it, which
// undoes the statement. A write is one round trip, a Multi of 50
// operations included.
//
// Each namespace has a row holding its revision. Every write adds one to
// it first, so the writes of a namespace take its row lock one at a time
// and commit in revision order; that revision is the Czxid or Mzxid of
// what the write changed, and the revision of its entries in the change
// log. A sequential node's suffix is its parent's cversion (as
// ZooKeeper's is), read under that lock: unique across all clients.
//
// # Sessions
//
// A session is a row whose lease the server's clock keeps: expires is
// now() + the session timeout, renewed by a heartbeat every fifth of it.
// A session whose lease ran out is reaped by any live client of its
// namespace (at each of its heartbeats, and at the moment the next lease
// of another session runs out, which each heartbeat reads): the session
// row and its ephemeral nodes are deleted in one transaction, which a
// second reaper finds done.
// An ephemeral create checks, in its transaction, that its session's lease
// still runs on the server's clock, holding the row against a reaper.
//
// The holder does not wait for that: as on ZooKeeper and etcd, its
// fencing lease ([regcenter.Session.Check]) runs for two thirds of the
// timeout from the send time of the latest heartbeat the server answered,
// on the monotonic clock, and the session ends (SessionLost) when it
// lapses, before the server can reap it. If the server then still holds
// the session (it was unreachable for less than the timeout), the next
// heartbeat starts a new Session on the same row (SessionNew), whose
// ephemeral nodes are still there; if the row was reaped, a new row is
// made: a new session id, SessionNew, ephemeral nodes to create again.
// A server that stops and starts again within the lease costs at most a
// SessionSuspended (once a heartbeat fails) and a SessionReconnected.
//
// # Watches
//
// Every write appends its changes to a log table (created, deleted, data
// set, with the write's revision) in its transaction, and notifies a
// LISTEN channel. One reader per center reads the log after the last
// revision it delivered, when notified and every few seconds regardless,
// and maps the entries to node and children events as ZooKeeper gives
// them. After a reconnect it goes on from that revision: nothing is lost
// across a restart of the server. The log is pruned to its newest
// revisions (DefaultLogRetention); a reader that fell further behind than
// that finds its revision pruned and delivers EventResync to every watch
// instead of a silent gap.
//
// # Failover
//
// A URL may list a primary and its standbys with
// target_session_attrs=read-write: new connections go to the one that
// takes writes. Each new connection reads which server it reached (its
// system identifier and WAL timeline, which a promotion moves on); when
// that changes, every watch is resynchronised before anything read there
// is delivered, since a standby that lacked the latest commits reuses
// their revisions. A session whose row reached the standby goes on if the
// promotion comes within its fencing lease. Acknowledged writes survive a
// promotion only if the standby was synchronous (synchronous_standby_names).
//
// # The database
//
// Open creates the tables and functions (prefixed shardjob_rc_) in the
// connection's current schema, or migrates older ones, in one transaction
// under an advisory lock, and refuses a schema newer than the code's
// ([SchemaVersion]). The user needs CREATE on that schema the first time
// and then only rights on its own tables; no superuser. The password comes
// from Config.Digest or DigestFile ("user:password") or from pgx's own
// environment (PGPASSWORD, PGPASSFILE, ~/.pgpass), never the URL.
// sslmode=verify-full in the URL (with sslrootcert) is honoured as libpq
// does; the Config's TLS fields or regcenter.WithTLSConfig replace it.
package postgres

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/internal/backend"
)

func init() {
	open := func(ctx context.Context, cfg regcenter.Config, opts ...regcenter.Option) (regcenter.Center, error) {
		c, err := Open(ctx, cfg, opts...)
		if err != nil {
			return nil, err // not a nil *Center in a non-nil regcenter.Center
		}
		return c, nil
	}
	regcenter.RegisterOpener("postgres", open)
	regcenter.RegisterOpener("postgresql", open)
}

// DefaultLogRetention is how many of a namespace's newest revisions the
// change log keeps: a watcher that falls further behind (a process
// suspended through a burst of writes) resynchronises its watches.
const DefaultLogRetention = 100_000

// ListenerApplicationName is the application_name of each center's
// listening connection (pg_stat_activity), unless the URL sets one; its
// other connections are "shardjob-regcenter".
const ListenerApplicationName = "shardjob-regcenter-listener"

// pruneBatch bounds the revisions one pruning pass drops.
const pruneBatch = 10_000

// logPage bounds the log entries one read of the watch reader takes.
const logPage = 2000

// pollEvery is how often the watch reader reads the log without a
// notification, in case one was lost with a connection.
const pollEvery = 2 * time.Second

// Center is the [regcenter.Center] on PostgreSQL. Create it with [Open]
// (or regcenter.Open with a postgres:// URL); it is safe for concurrent
// use.
type Center struct {
	cfg   regcenter.Config
	ns    string
	pool  *pgxpool.Pool
	pgcfg *pgx.ConnConfig // for the watch reader's own connection
	log   *slog.Logger
	where string // the server, for messages

	epoch     time.Time
	lastRenew atomic.Int64 // ns since epoch: send time of the latest answered heartbeat
	ttl       time.Duration
	// lapseAt is when, as the latest heartbeat read it, the next lease of
	// another session of the namespace runs out: ns since epoch, plus
	// one (0: none). A heartbeat that moves it earlier nudges the loop,
	// which sends the reaping heartbeat then (heartbeatLoop).
	lapseAt atomic.Int64
	nudge   chan struct{}

	sessions *regcenter.SessionKeeper
	reads    chan *readReq // WatchNow's reads, for the reader (readgroup.go)
	// row is the server-side session the heartbeat renews; nil when it
	// is gone and a new one must be made.
	row atomic.Pointer[sessionRow]

	watches *watchTable
	// server names the server the latest new connection reached: its
	// system identifier and timeline (identify).
	server atomic.Pointer[string]
	// retention is the log retention in revisions (tests lower it).
	retention atomic.Int64

	counters counters

	life    context.Context // ends at Close; every goroutine's and request's context
	endLife context.CancelFunc
	wg      sync.WaitGroup
	closed  atomic.Bool

	// seen is the highest revision an answer has shown this client: the
	// writes it sends act on no node made after it (see write).
	seen atomic.Int64
}

var _ regcenter.Center = (*Center)(nil)

// counters count the requests sent, for Stats.
type counters struct {
	reads, writes, multis, watchReqs, multiWrites, errs, heartbeats atomic.Int64
}

func (c *counters) counted(err error) error {
	if err == nil || errors.Is(err, regcenter.ErrNoNode) || errors.Is(err, regcenter.ErrNodeExists) ||
		errors.Is(err, regcenter.ErrBadVersion) || errors.Is(err, regcenter.ErrNotEmpty) {
		return err
	}
	c.errs.Add(1)
	return err
}

// Open connects to the PostgreSQL database cfg.URL names, creates or
// migrates the registry's schema, creates the namespace's root and starts
// a session. It fails with regcenter.ErrInvalidConfig for a bad config,
// regcenter.ErrUnreachable when the server does not answer within
// cfg.ConnectTimeout (or ctx ends), regcenter.ErrTLS when the TLS
// handshake fails and regcenter.ErrUnauthorized when the server refuses
// the user or its rights.
func Open(ctx context.Context, cfg regcenter.Config, opts ...regcenter.Option) (*Center, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("%w: url: want postgres://user@host:port/database", regcenter.ErrInvalidConfig)
	}
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: url %s: %v", regcenter.ErrInvalidConfig, u.Redacted(), err)
	}
	cfg, logger, tlsCfg, err := backend.Settle(cfg, opts)
	if err != nil {
		return nil, err
	}
	if cfg.Digest != "" {
		user, pass, _ := strings.Cut(cfg.Digest, ":")
		pcfg.ConnConfig.User, pcfg.ConnConfig.Password = user, pass
	}
	if tlsCfg != nil {
		useTLS(&pcfg.ConnConfig.Config, tlsCfg)
	}
	pcfg.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	pcfg.MaxConns = max(pcfg.MaxConns, 8)
	pcfg.MinConns = 1
	// A connection idle for long may have been cut by a firewall; the
	// pool checks it before use.
	pcfg.HealthCheckPeriod = max(cfg.SessionTimeout/2, time.Second)
	where := hosts(&pcfg.ConnConfig.Config) + "/" + pcfg.ConnConfig.Database
	// Name the connections for pg_stat_activity, unless the URL does.
	listenCfg := pcfg.ConnConfig.Copy()
	if _, named := pcfg.ConnConfig.RuntimeParams["application_name"]; !named {
		pcfg.ConnConfig.RuntimeParams["application_name"] = "shardjob-regcenter"
		listenCfg.RuntimeParams["application_name"] = ListenerApplicationName
	}

	c := &Center{
		cfg:     cfg,
		ns:      cfg.Namespace,
		pgcfg:   listenCfg,
		reads:   make(chan *readReq, maxReadGroup),
		log:     logger.With("component", "regcenter", "backend", regcenter.BackendPostgres),
		where:   where,
		epoch:   time.Now(),
		ttl:     cfg.SessionTimeout,
		nudge:   make(chan struct{}, 1),
		watches: newWatchTable(),
	}
	c.retention.Store(DefaultLogRetention)
	// Each new connection says which server it reached; a different one
	// (a standby promoted, another database) resynchronises the watches.
	pcfg.AfterConnect = c.identify
	c.sessions = regcenter.NewSessionKeeper(c.log, regcenter.BackendPostgres, c)
	c.life, c.endLife = context.WithCancel(context.Background())
	c.watches.done = c.life.Done()

	cctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(c.life, pcfg)
	if err != nil {
		c.endLife()
		return nil, c.connectError(err)
	}
	c.pool = pool
	fail := func(err error) (*Center, error) {
		pool.Close()
		c.endLife()
		return nil, err
	}
	if err := pool.Ping(cctx); err != nil {
		return fail(c.connectError(err))
	}
	if err := migrate(cctx, pool); err != nil {
		if errors.Is(err, errSchemaNewer) {
			return fail(fmt.Errorf("%w: PostgreSQL at %s: %w", regcenter.ErrInvalidConfig, where, err))
		}
		return fail(c.connectError(err))
	}
	_, err = pool.Exec(cctx, `WITH n AS (INSERT INTO shardjob_rc_ns (ns) VALUES ($1) ON CONFLICT DO NOTHING)
		INSERT INTO shardjob_rc_nodes (ns, path, parent, name, czxid, mzxid, ctime, mtime)
		VALUES ($1, '/', '', '', 0, 0, now(), now()) ON CONFLICT DO NOTHING`, c.ns)
	c.counters.writes.Add(1)
	if err != nil {
		return fail(c.connectError(err))
	}
	sent := time.Since(c.epoch)
	row, err := c.newSession(cctx)
	if err != nil {
		return fail(c.connectError(err))
	}
	c.renewed(sent)
	c.row.Store(row)
	c.sessions.Established(row.id)
	c.watches.setStart(c.nsRev(cctx))

	c.goLoop(c.sessions.Run)
	c.goLoop(c.heartbeatLoop)
	c.goLoop(c.watchdog)
	c.goLoop(c.watchLoop)
	c.goLoop(c.listenLoop)
	c.goLoop(c.readLoop)
	return c, nil
}

// useTLS makes every host of cfg (the first, and the fallbacks a
// multi-host URL lists) connect with tlsCfg, checking each host's name
// unless tlsCfg names the server, and drops the plain-text fallbacks.
func useTLS(cfg *pgconn.Config, tlsCfg *tls.Config) {
	forHost := func(host string) *tls.Config {
		t := tlsCfg.Clone()
		if t.ServerName == "" && !t.InsecureSkipVerify {
			t.ServerName = host
		}
		return t
	}
	cfg.TLSConfig = forHost(cfg.Host)
	seen := map[string]bool{net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)): true}
	var fallbacks []*pgconn.FallbackConfig
	for _, fb := range cfg.Fallbacks {
		hp := net.JoinHostPort(fb.Host, fmt.Sprint(fb.Port))
		if seen[hp] { // the plain-text fallback of a host already listed
			continue
		}
		seen[hp] = true
		fallbacks = append(fallbacks, &pgconn.FallbackConfig{Host: fb.Host, Port: fb.Port, TLSConfig: forHost(fb.Host)})
	}
	cfg.Fallbacks = fallbacks
}

// hosts lists cfg's hosts as host:port,host:port, for messages.
func hosts(cfg *pgconn.Config) string {
	list := []string{net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))}
	for _, fb := range cfg.Fallbacks {
		if hp := net.JoinHostPort(fb.Host, fmt.Sprint(fb.Port)); !slices.Contains(list, hp) {
			list = append(list, hp)
		}
	}
	return strings.Join(list, ",")
}

// serverIdentity is one statement that names the server a connection
// reached: its cluster's system identifier and its WAL timeline, which a
// promotion moves on (empty on a standby, which has no timeline of its
// own to write on).
const serverIdentity = `SELECT (SELECT system_identifier FROM pg_control_system())::text || '/' ||
	CASE WHEN pg_is_in_recovery() THEN '' ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END`

// identify is the pool's AfterConnect: it reads which server the new
// connection reached, and when that is not the server of the connections
// before it (a standby promoted after a failover, another database
// behind the same address), it tells the watch reader, which then
// resynchronises every watch before it delivers anything read on it: a
// server that lacks the latest commits reuses their revisions, so the
// position in the change log means nothing there. A server that cannot
// say (the functions refused) is taken for the same one.
func (c *Center) identify(ctx context.Context, conn *pgx.Conn) error {
	var id string
	if err := conn.QueryRow(ctx, serverIdentity).Scan(&id); err != nil {
		c.log.Debug("cannot tell which PostgreSQL server a connection reached; a failover will be noticed only if the revisions went back", "err", err)
		return nil
	}
	if prev := c.server.Swap(&id); prev != nil && *prev != id {
		c.log.Warn("connected to another PostgreSQL server than before (a failover?); resynchronising the watches",
			"before", *prev, "now", id)
		c.watches.serverChanged.Store(true)
	}
	return nil
}

// goLoop runs f on a goroutine the center owns until Close.
func (c *Center) goLoop(f func(ctx context.Context)) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f(c.life)
	}()
}

// nsRev reads the namespace's revision (0 on an error: the watch reader
// then reads the whole log, which only repeats events).
func (c *Center) nsRev(ctx context.Context) int64 {
	var rev int64
	_ = c.pool.QueryRow(ctx, "SELECT rev FROM shardjob_rc_ns WHERE ns = $1", c.ns).Scan(&rev)
	c.see(rev)
	return rev
}

// connectError explains why Open failed.
func (c *Center) connectError(err error) error {
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "42501":
		return fmt.Errorf("%w: PostgreSQL at %s: the user may not create or use the registry's tables "+
			"(it needs CREATE on the schema the first time, then rights on the shardjob_rc_ tables): %w", regcenter.ErrUnauthorized, c.where, err)
	case errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28"):
		return fmt.Errorf("%w: PostgreSQL at %s: %w", regcenter.ErrUnauthorized, c.where, err)
	case errors.As(err, &pe) && pe.Code == "3D000":
		return fmt.Errorf("%w: PostgreSQL at %s: %w", regcenter.ErrInvalidConfig, c.where, err)
	case errors.As(err, &pe):
		return fmt.Errorf("%w: PostgreSQL at %s: %w", regcenter.ErrUnreachable, c.where, err)
	case isTLSError(err):
		return fmt.Errorf("%w: PostgreSQL at %s: %w", regcenter.ErrTLS, c.where, err)
	}
	return fmt.Errorf("%w: PostgreSQL at %s within %v: %w", regcenter.ErrUnreachable, c.where, c.cfg.ConnectTimeout, err)
}

func isTLSError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "x509:") || strings.Contains(s, "tls:") || strings.Contains(s, "server refused TLS")
}

// Namespace returns the namespace this center works in.
func (c *Center) Namespace() string { return c.ns }

// SessionTimeout returns the session's lease on the server.
func (c *Center) SessionTimeout() time.Duration { return c.ttl }

// Pool returns the connection pool the center uses, for tools (an
// operator's dump, a test's fault). Writes through it bypass the tree's
// invariants.
func (c *Center) Pool() *pgxpool.Pool { return c.pool }

// ---- the session ----

// sessionRow names a session on the server: its id (the ephemeral owner
// of its nodes) and the holder's random token.
type sessionRow struct{ id, token int64 }

// newSession makes a session row.
func (c *Center) newSession(ctx context.Context) (*sessionRow, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	r := &sessionRow{token: int64(binary.LittleEndian.Uint64(b[:]))}
	err := c.pool.QueryRow(ctx, `INSERT INTO shardjob_rc_sessions (ns, token, ttl, expires)
		VALUES ($1, $2, make_interval(secs => $3), now() + make_interval(secs => $3)) RETURNING id`,
		c.ns, r.token, c.ttl.Seconds()).Scan(&r.id)
	c.counters.writes.Add(1)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (c *Center) renewed(sent time.Duration) {
	for {
		cur := c.lastRenew.Load()
		if int64(sent) <= cur || c.lastRenew.CompareAndSwap(cur, int64(sent)) {
			return
		}
	}
}

// SinceRead is how long since the send time of the latest heartbeat the
// server answered ([regcenter.LeaseClock]).
func (c *Center) SinceRead() time.Duration {
	return time.Since(c.epoch) - time.Duration(c.lastRenew.Load())
}

// LeaseDuration is two thirds of the session timeout: the server cannot
// reap the session earlier than a full timeout after it renewed it, which
// it did after the heartbeat was sent ([regcenter.LeaseClock]).
func (c *Center) LeaseDuration() time.Duration { return c.ttl * 2 / 3 }

// LeaseLeft is the fencing lease left ([regcenter.LeaseClock]).
func (c *Center) LeaseLeft() time.Duration { return c.LeaseDuration() - c.SinceRead() }

// Backend names PostgreSQL, for messages ([regcenter.LeaseClock]).
func (c *Center) Backend() string { return "PostgreSQL" }

// heartbeatLoop renews the session every fifth of its timeout, each
// attempt bounded by a fifth, and reaps the namespace's lapsed sessions
// and prunes its change log alongside. When another session's lease runs
// out sooner than the next renewal (lapseAt), a heartbeat goes then,
// reapSlack after it, so that a dead instance's session is reaped as soon
// as the server may, not up to a fifth of the timeout later: the take-over
// of its items waits for that reap.
func (c *Center) heartbeatLoop(ctx context.Context) {
	due := time.Now().Add(c.ttl / 5)
	timer := time.NewTimer(c.ttl / 5)
	defer timer.Stop()
	for {
		wait := time.Until(due)
		if at := c.lapseAt.Load(); at > 0 {
			wait = min(wait, max(time.Duration(at-1)-time.Since(c.epoch)+reapSlack, minBeat))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-c.nudge:
			continue
		case <-timer.C:
		}
		next := max(c.ttl/5, minBeat)
		if !c.heartbeatOnce(ctx) {
			next = 100 * time.Millisecond
		}
		due = time.Now().Add(next)
	}
}

// reapSlack is how long after another session's lease runs out, by the
// server's clock as a heartbeat last read it, the heartbeat that reaps it
// is sent; minBeat is the least time between two heartbeats.
const (
	reapSlack = 10 * time.Millisecond
	minBeat   = 50 * time.Millisecond
)

// noteLapse records when the next lease of another session runs out, in
// lapse from now (negative: none known), and nudges the loop when that is
// sooner than it knew.
func (c *Center) noteLapse(lapse time.Duration) {
	if lapse < 0 {
		c.lapseAt.Store(0)
		return
	}
	at := int64(time.Since(c.epoch)+lapse) + 1
	if prev := c.lapseAt.Swap(at); prev == 0 || at < prev {
		select {
		case c.nudge <- struct{}{}:
		default:
		}
	}
}

// heartbeatOnce renews the session (or makes a new one when the server no
// longer has it) and reports whether the server answered. With the
// renewal it reads when the next lease of another session of the
// namespace runs out (noteLapse).
func (c *Center) heartbeatOnce(ctx context.Context) bool {
	answered, lapse := c.beat(ctx)
	c.noteLapse(lapse) // none known when not answered
	return answered
}

// beat is heartbeatOnce, also returning how long, by the server's clock,
// until the next lease of another session of the namespace runs out
// (-1: none known).
func (c *Center) beat(ctx context.Context) (bool, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, max(c.ttl/5, 200*time.Millisecond))
	defer cancel()
	c.counters.heartbeats.Add(1)
	row := c.row.Load()
	sent := time.Since(c.epoch)
	if row == nil {
		nrow, err := c.newSession(ctx)
		if err != nil {
			c.counters.errs.Add(1)
			c.log.Debug("making a new session", "err", err)
			return false, -1
		}
		// Stored before looking at Closing: a Close under way reaps it.
		c.row.Store(nrow)
		if c.sessions.Closing() {
			return true, -1
		}
		c.renewed(sent)
		if c.sessions.Established(nrow.id) == regcenter.SessionNext {
			c.watches.resyncAll()
		}
		return true, -1
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE shardjob_rc_sessions SET expires = now() + ttl WHERE id = $1 AND token = $2 AND expires > now()`, row.id, row.token)
	b.Queue(`SELECT shardjob_rc_reap($1, 0, 0)`, c.ns)
	b.Queue(`SELECT shardjob_rc_prune($1, $2, $3)`, c.ns, c.retention.Load(), pruneBatch)
	b.Queue(`SELECT EXTRACT(EPOCH FROM min(expires) - now())::float8 FROM shardjob_rc_sessions WHERE ns = $1 AND id <> $2`, c.ns, row.id)
	br := c.pool.SendBatch(ctx, b)
	tag, err := br.Exec()
	for i := 0; i < 2 && err == nil; i++ { // the reap, the prune
		_, err = br.Exec()
	}
	var until *float64
	if err == nil {
		err = br.QueryRow().Scan(&until)
	}
	cerr := br.Close()
	if err == nil {
		err = cerr
	}
	lapse := time.Duration(-1)
	if until != nil {
		lapse = max(time.Duration(*until*float64(time.Second)), 0)
	}
	if c.sessions.Closing() {
		return true, -1
	}
	switch {
	case err == nil && tag.RowsAffected() == 1:
		c.renewed(sent)
		// A live session goes on (reconnected if suspended); one whose
		// fencing lease lapsed here while the server kept it is followed
		// by a new Session on the same row.
		if c.sessions.Established(row.id) == regcenter.SessionNext {
			c.watches.resyncAll()
		}
	case err == nil:
		c.row.Store(nil)
		c.sessions.Lose(fmt.Errorf("%w: session %d expired in PostgreSQL", regcenter.ErrSessionLost, row.id))
		c.sessions.Wake()
		return false, -1 // make a new one at once
	default:
		c.counters.errs.Add(1)
		c.sessions.Suspend("PostgreSQL heartbeat failed; firing suspended", "err", err)
		return false, -1
	}
	return true, lapse
}

// watchdog ends the session when its fencing lease lapses on the
// monotonic clock, whether or not a renewal is outstanding. It ends with
// ctx.
func (c *Center) watchdog(ctx context.Context) {
	c.sessions.WatchLease(ctx, c.LeaseLeft, "no heartbeat answered by PostgreSQL")
}

// Session returns the current session.
func (c *Center) Session() *regcenter.Session { return c.sessions.Current() }

// OnSession registers fn for session events, delivered in order on one
// goroutine; fn must not block.
func (c *Center) OnSession(fn func(regcenter.SessionEvent)) (cancel func()) {
	return c.sessions.Subscribe(fn)
}

// Stats returns the requests sent so far. Heartbeats (with the reaping
// and pruning they carry) and the watch reader's reads of the change log
// are the session's and the watches' upkeep, not requests: Heartbeats
// counts the former.
func (c *Center) Stats() regcenter.Stats {
	w := c.counters.writes.Load()
	return regcenter.Stats{Reads: c.counters.reads.Load(), Writes: w, Multis: c.counters.multis.Load(),
		Watches: c.counters.watchReqs.Load(), WriteOps: w + c.counters.multiWrites.Load(),
		Errors: c.counters.errs.Load(), Backend: regcenter.BackendPostgres}
}

// Heartbeats returns the number of heartbeats sent so far.
func (c *Center) Heartbeats() int64 { return c.counters.heartbeats.Load() }

// Close ends the session (its ephemeral nodes are deleted before Close
// returns), stops the center's goroutines and closes its connections. It
// is idempotent.
func (c *Center) Close() error {
	if _, ok := c.sessions.Close(); !ok {
		return nil
	}
	c.closed.Store(true)
	c.endLife()
	c.wg.Wait()
	var err error
	if row := c.row.Load(); row != nil {
		id := row.id
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ConnectTimeout)
		_, err = c.pool.Exec(ctx, "SELECT shardjob_rc_reap($1, $2, $3)", c.ns, row.id, row.token)
		cancel()
		c.counters.writes.Add(1)
		if err != nil {
			err = fmt.Errorf("regcenter: closing: ending session %d (its ephemeral nodes go when its lease runs out): %w", id, translate(err))
		}
	}
	c.pool.Close()
	return err
}

// ---- requests ----

// errOutOfTime marks a request that got no answer within the session
// timeout.
var errOutOfTime = errors.New("no answer from PostgreSQL within the session timeout")

// do runs one request f under a context bounded by ctx, the center's
// life and the session timeout, counts it and translates its error.
func (c *Center) do(ctx context.Context, counter *atomic.Int64, f func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.closed.Load() {
		return regcenter.ErrClosed
	}
	counter.Add(1)
	rctx, cancel := context.WithTimeoutCause(ctx, c.cfg.SessionTimeout, errOutOfTime)
	defer cancel()
	stop := context.AfterFunc(c.life, cancel)
	defer stop()
	err := f(rctx)
	if err == nil {
		return nil
	}
	if c.closed.Load() {
		return c.counters.counted(regcenter.ErrClosed)
	}
	if ctx.Err() != nil {
		return c.counters.counted(ctx.Err())
	}
	if errors.Is(context.Cause(rctx), errOutOfTime) {
		return c.counters.counted(fmt.Errorf("%w: %v", regcenter.ErrConnectionLoss, errOutOfTime))
	}
	return c.counters.counted(translate(err))
}

// retryingRead runs an idempotent read, again with backoff after a lost
// connection.
func (c *Center) retryingRead(ctx context.Context, counter *atomic.Int64, f func(ctx context.Context) error) error {
	sleep := c.cfg.BaseSleep
	for attempt := 0; ; attempt++ {
		err := c.do(ctx, counter, f)
		if err == nil || !errors.Is(err, regcenter.ErrConnectionLoss) || attempt >= c.cfg.MaxRetries {
			return err
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-c.life.Done():
			t.Stop()
			return regcenter.ErrClosed
		case <-t.C:
		}
		sleep = min(sleep*2, c.cfg.MaxSleep)
	}
}

// translate maps pgx's errors to regcenter's sentinels: the server's
// answers that name a failed op (raised by shardjob_rc_write) to theirs,
// a refused right to ErrUnauthorized, anything but an answer from the
// server to ErrConnectionLoss.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "P0001" && strings.HasPrefix(pe.Message, "shardjob:"):
			return opError(pe.Message)
		case pe.Code == "42501", pe.Code == "28P01", pe.Code == "28000":
			return fmt.Errorf("%w: %v", regcenter.ErrUnauthorized, err)
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", strings.HasPrefix(pe.Code, "08"):
			// The server is shutting down or starting; the connection broke.
			return fmt.Errorf("%w: %v", regcenter.ErrConnectionLoss, err)
		case pe.Code == "54000" || pe.Code == "54001":
			return fmt.Errorf("%w: %v", regcenter.ErrTooLarge, err)
		}
		return fmt.Errorf("regcenter: PostgreSQL: %w", err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		// Every read names the namespace's row, made at Open: it is gone.
		return fmt.Errorf("%w: the namespace is gone from PostgreSQL", regcenter.ErrNoNode)
	}
	// Anything else is no answer from the server: the connection failed
	// (refused, cut, timed out), and a write's outcome is unknown.
	return fmt.Errorf("%w: %v", regcenter.ErrConnectionLoss, err)
}

// errEphemeralParent is a create under an ephemeral node, which
// ZooKeeper refuses (NoChildrenForEphemerals) and so does this center.
var errEphemeralParent = errors.New("regcenter: ephemeral nodes have no children")

// opFailure is a failed op of a write, as the server named it.
type opFailure struct {
	index int
	err   error
}

func (f *opFailure) Error() string { return fmt.Sprintf("op %d: %v", f.index, f.err) }
func (f *opFailure) Unwrap() error { return f.err }

// maxUnseen bounds the writes sent again after an 'unseen' answer: each
// catches up to the revision the answer names, so a second is refused only
// when a node the write names was made again meanwhile.
const maxUnseen = 4

// unseenAnswer reports whether err is shardjob_rc_write_seen's refusal of
// a write naming a node created after the revision it was sent with, and
// the namespace's revision it gave.
func unseenAnswer(err error) (int64, bool) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "P0001" || !strings.HasPrefix(pe.Message, "shardjob:unseen:") {
		return 0, false
	}
	parts := strings.Split(pe.Message, ":")
	rev, perr := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	if len(parts) != 4 || perr != nil || rev <= 0 {
		return 0, false
	}
	return rev, true
}

// see raises c.seen to rev.
func (c *Center) see(rev int64) {
	for {
		old := c.seen.Load()
		if rev <= old || c.seen.CompareAndSwap(old, rev) {
			return
		}
	}
}

// opError decodes "shardjob:<why>:<index>".
func opError(msg string) error {
	parts := strings.Split(msg, ":")
	if len(parts) != 3 {
		return fmt.Errorf("regcenter: PostgreSQL: %s", msg)
	}
	var i int
	fmt.Sscan(parts[2], &i)
	var err error
	switch parts[1] {
	case "nonode":
		err = regcenter.ErrNoNode
	case "exists":
		err = regcenter.ErrNodeExists
	case "badversion":
		err = regcenter.ErrBadVersion
	case "notempty":
		err = regcenter.ErrNotEmpty
	case "session":
		err = fmt.Errorf("%w: the session's lease ran out in PostgreSQL", regcenter.ErrSessionLost)
	case "ephemeralparent":
		err = errEphemeralParent
	case "nons":
		err = fmt.Errorf("%w: the namespace is gone from PostgreSQL", regcenter.ErrNoNode)
	default:
		err = fmt.Errorf("regcenter: PostgreSQL: %s", msg)
	}
	return &opFailure{index: i, err: err}
}

// ---- reads ----

const statCols = `version, cversion, owner, czxid, mzxid, ctime, mtime, numchildren, length(data)`

func scanStat(row pgx.Row, data *[]byte) (regcenter.Stat, error) {
	var st regcenter.Stat
	dest := []any{&st.Version, &st.CVersion, &st.EphemeralOwner, &st.Czxid, &st.Mzxid, &st.Ctime, &st.Mtime, &st.NumChildren, &st.DataLength}
	if data != nil {
		dest = append([]any{data}, dest...)
	}
	err := row.Scan(dest...)
	return st, err
}

// Get returns a node's data and stat.
func (c *Center) Get(ctx context.Context, p string) ([]byte, regcenter.Stat, error) {
	cp, err := backend.CleanPath(p)
	if err != nil {
		return nil, regcenter.Stat{}, err
	}
	var data []byte
	var st regcenter.Stat
	found := true
	err = c.retryingRead(ctx, &c.counters.reads, func(ctx context.Context) error {
		st, err = scanStat(c.pool.QueryRow(ctx, `SELECT data, `+statCols+` FROM shardjob_rc_nodes WHERE ns = $1 AND path = $2`, c.ns, cp), &data)
		if errors.Is(err, pgx.ErrNoRows) {
			found = false
			return nil
		}
		return err
	})
	if err != nil {
		return nil, regcenter.Stat{}, backend.WrapPath("get", p, err)
	}
	if !found {
		return nil, regcenter.Stat{}, backend.WrapPath("get", p, regcenter.ErrNoNode)
	}
	c.see(st.Mzxid)
	if data == nil {
		data = []byte{}
	}
	return data, st, nil
}

// maxReadPaths bounds the nodes of one GetMany statement.
const maxReadPaths = 1000

// getManyQuery reads, for each path of $2 in namespace $1, in order, the
// node's data and stat (NULLs where there is none), and the namespace's
// revision.
const getManyQuery = `SELECT (SELECT rev FROM shardjob_rc_ns WHERE ns = $1), p.i, n.data,
		n.version, n.cversion, n.owner, n.czxid, n.mzxid, n.ctime, n.mtime, n.numchildren, length(n.data)
	FROM unnest($2::text[]) WITH ORDINALITY AS p(path, i)
	LEFT JOIN shardjob_rc_nodes n ON n.ns = $1 AND n.path = p.path ORDER BY p.i`

// GetMany reads several nodes' data and stats, one statement per batch of
// paths (see regcenter.Center.GetMany), each batch one snapshot.
func (c *Center) GetMany(ctx context.Context, paths ...string) ([]regcenter.NodeData, error) {
	clean := make([]string, len(paths))
	for i, p := range paths {
		cp, err := backend.CleanPath(p)
		if err != nil {
			return nil, err
		}
		clean[i] = cp
	}
	out := make([]regcenter.NodeData, 0, len(paths))
	for _, batch := range backend.ReadBatches(clean, maxReadPaths, backend.MaxNodeBytes(c.cfg)) {
		var nodes []regcenter.NodeData
		var rev int64
		err := c.retryingRead(ctx, &c.counters.reads, func(ctx context.Context) error {
			nodes, rev = make([]regcenter.NodeData, len(batch)), 0
			rows, err := c.pool.Query(ctx, getManyQuery, c.ns, batch)
			if err != nil {
				return err
			}
			defer rows.Close()
			seen := 0
			for rows.Next() {
				var nsRev *int64
				var i int64
				var data []byte
				var owner *int64
				var s struct {
					v, cv, nc, dl *int32
					cz, mz        *int64
					ct, mt        *time.Time
				}
				if err := rows.Scan(&nsRev, &i, &data, &s.v, &s.cv, &owner, &s.cz, &s.mz, &s.ct, &s.mt, &s.nc, &s.dl); err != nil {
					return err
				}
				if i < 1 || int(i) > len(batch) {
					return fmt.Errorf("regcenter: a bulk read answered for path %d of %d", i, len(batch))
				}
				if nsRev != nil {
					rev = *nsRev
				}
				if s.v != nil {
					if data == nil {
						data = []byte{}
					}
					nodes[i-1] = regcenter.NodeData{Exists: true, Data: data, Stat: regcenter.Stat{Version: *s.v, CVersion: *s.cv,
						EphemeralOwner: *owner, Czxid: *s.cz, Mzxid: *s.mz, Ctime: *s.ct, Mtime: *s.mt, NumChildren: *s.nc, DataLength: *s.dl}}
				}
				seen++
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if seen != len(batch) {
				return fmt.Errorf("regcenter: a bulk read answered %d paths of %d", seen, len(batch))
			}
			return nil
		})
		if err != nil {
			return nil, backend.WrapPath("get", paths[len(out)], err)
		}
		c.see(rev)
		out = append(out, nodes...)
	}
	return out, nil
}

// Exists reports whether a node exists, with its stat when it does.
func (c *Center) Exists(ctx context.Context, p string) (bool, regcenter.Stat, error) {
	ok, st, _, err := c.exists(ctx, p, &c.counters.reads)
	return ok, st, err
}

func (c *Center) exists(ctx context.Context, p string, counter *atomic.Int64) (bool, regcenter.Stat, int64, error) {
	cp, err := backend.CleanPath(p)
	if err != nil {
		return false, regcenter.Stat{}, 0, err
	}
	var st regcenter.Stat
	var rev int64
	found := true
	err = c.retryingRead(ctx, counter, func(ctx context.Context) error {
		var owner *int64
		var s struct {
			v, cv, nc, dl *int32
			cz, mz        *int64
			ct, mt        *time.Time
		}
		err := c.pool.QueryRow(ctx, `SELECT ns.rev, n.version, n.cversion, n.owner, n.czxid, n.mzxid, n.ctime, n.mtime, n.numchildren, length(n.data)
			FROM shardjob_rc_ns ns LEFT JOIN shardjob_rc_nodes n ON n.ns = ns.ns AND n.path = $2 WHERE ns.ns = $1`, c.ns, cp).
			Scan(&rev, &s.v, &s.cv, &owner, &s.cz, &s.mz, &s.ct, &s.mt, &s.nc, &s.dl)
		if err != nil {
			return err
		}
		if s.v == nil {
			found = false
			return nil
		}
		found = true
		st = regcenter.Stat{Version: *s.v, CVersion: *s.cv, EphemeralOwner: *owner, Czxid: *s.cz, Mzxid: *s.mz,
			Ctime: *s.ct, Mtime: *s.mt, NumChildren: *s.nc, DataLength: *s.dl}
		return nil
	})
	if err != nil {
		return false, regcenter.Stat{}, 0, backend.WrapPath("exists", p, err)
	}
	c.see(rev)
	return found, st, rev, nil
}

// Children lists a node's direct children: the rows whose parent it is.
func (c *Center) Children(ctx context.Context, p string) ([]string, error) {
	ok, kids, _, err := c.children(ctx, p, &c.counters.reads)
	if err != nil {
		return nil, backend.WrapPath("children", p, err)
	}
	if !ok {
		return nil, backend.WrapPath("children", p, regcenter.ErrNoNode)
	}
	return kids, nil
}

// children reads whether p exists, its children and the namespace's
// revision, in one statement (one snapshot).
func (c *Center) children(ctx context.Context, p string, counter *atomic.Int64) (bool, []string, int64, error) {
	cp, err := backend.CleanPath(p)
	if err != nil {
		return false, nil, 0, err
	}
	var ok bool
	var kids []string
	var rev int64
	err = c.retryingRead(ctx, counter, func(ctx context.Context) error {
		return c.pool.QueryRow(ctx, `SELECT ns.rev,
				EXISTS (SELECT 1 FROM shardjob_rc_nodes WHERE ns = $1 AND path = $2),
				coalesce((SELECT array_agg(name) FROM shardjob_rc_nodes WHERE ns = $1 AND parent = $2), '{}')
			FROM shardjob_rc_ns ns WHERE ns.ns = $1`, c.ns, cp).Scan(&rev, &ok, &kids)
	})
	if err != nil {
		return false, nil, 0, err
	}
	if kids == nil {
		kids = []string{}
	}
	c.see(rev)
	return ok, kids, rev, nil
}

// ---- writes ----

const (
	kindCreate int16 = 1
	kindSet    int16 = 2
	kindDelete int16 = 3
	kindCheck  int16 = 4
)

// writeResult is what shardjob_rc_write returned.
type writeResult struct {
	paths []string
	found bool
	stat  regcenter.Stat
}

// write sends ops to shardjob_rc_write: one statement, one transaction,
// one round trip. Writes are not retried: after a lost connection their
// outcome is unknown (ErrConnectionLoss), as on the other registries.
func (c *Center) write(ctx context.Context, counter *atomic.Int64, mkparents bool, ops []regcenter.Op) (writeResult, error) {
	n := len(ops)
	kinds := make([]int16, n)
	paths := make([]string, n)
	data := make([][]byte, n)
	vers := make([]int32, n)
	modes := make([]int16, n)
	for i, op := range ops {
		switch o := op.(type) {
		case regcenter.CreateOp:
			kinds[i], paths[i], data[i], modes[i] = kindCreate, o.Path, o.Data, int16(o.Mode)
		case regcenter.SetOp:
			kinds[i], paths[i], data[i], vers[i] = kindSet, o.Path, o.Data, o.Version
		case regcenter.DeleteOp:
			kinds[i], paths[i], vers[i] = kindDelete, o.Path, o.Version
		case regcenter.CheckOp:
			kinds[i], paths[i], vers[i] = kindCheck, o.Path, o.Version
		default:
			return writeResult{}, fmt.Errorf("regcenter: unknown op %T", op)
		}
		if data[i] == nil {
			data[i] = []byte{}
		}
	}
	var sess, token int64
	if row := c.row.Load(); row != nil {
		sess, token = row.id, row.token
	}
	if s := c.sessions.Current(); s != nil && (s.Err() != nil || s.ID() != sess) {
		sess = 0 // an ephemeral create under a lost session must fail
	}
	var res writeResult
	var err error
	for attempt := 0; ; attempt++ {
		// The highest revision seen when the write is sent: the server
		// refuses to act on a node made after it (schema version 3).
		seen, unseen := c.seen.Load(), int64(0)
		err = c.do(ctx, counter, func(ctx context.Context) error {
			var (
				v, cv, nc, dl *int32
				owner, cz, mz *int64
				ct, mt        *time.Time
				found         bool
				rev           int64
			)
			err := c.pool.QueryRow(ctx, `SELECT * FROM shardjob_rc_write_seen($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				c.ns, seen, sess, token, mkparents, kinds, paths, data, vers, modes).
				Scan(&rev, &res.paths, &found, &v, &cv, &owner, &cz, &mz, &ct, &mt, &nc, &dl)
			if cur, ok := unseenAnswer(err); ok {
				unseen = cur
				return nil
			}
			if err != nil {
				return err
			}
			c.see(rev)
			res.found = found
			if found {
				res.stat = regcenter.Stat{Version: *v, CVersion: *cv, EphemeralOwner: *owner, Czxid: *cz, Mzxid: *mz,
					Ctime: *ct, Mtime: *mt, NumChildren: *nc, DataLength: *dl}
			}
			return nil
		})
		if err != nil || unseen == 0 {
			break
		}
		// A node made since this client last read: caught up, the write
		// goes again, as sent now.
		c.see(unseen)
		if attempt >= maxUnseen {
			err = fmt.Errorf("%w: the namespace changed under %d writes in a row", regcenter.ErrConnectionLoss, maxUnseen+1)
			break
		}
	}
	return res, err
}

// opErr returns the regcenter error of a failed single-op write.
func opErr(err error) error {
	var f *opFailure
	if errors.As(err, &f) {
		return f.err
	}
	return err
}

// Create creates a node, creating missing parents as persistent nodes in
// the same transaction.
func (c *Center) Create(ctx context.Context, p string, data []byte, mode regcenter.Mode) (string, error) {
	if err := backend.CheckNodeSize(backend.MaxNodeBytes(c.cfg), "create", p, data); err != nil {
		return "", err
	}
	cp, err := backend.CleanPath(p)
	if err != nil {
		return "", err
	}
	if cp == "/" {
		return "", backend.WrapPath("create", p, regcenter.ErrNodeExists)
	}
	if mode < regcenter.Persistent || mode > regcenter.PersistentSequential {
		return "", fmt.Errorf("regcenter: create %s: unknown mode %d", p, mode)
	}
	res, err := c.write(ctx, &c.counters.writes, true, []regcenter.Op{regcenter.CreateOp{Path: cp, Data: data, Mode: mode}})
	if err != nil {
		return "", backend.WrapPath("create", p, opErr(err))
	}
	return res.paths[0], nil
}

// EnsurePath creates p and its parents as empty persistent nodes where
// missing.
func (c *Center) EnsurePath(ctx context.Context, p string) error {
	if ok, _, err := c.Exists(ctx, p); err == nil && ok {
		return nil
	}
	_, err := c.Create(ctx, p, nil, regcenter.Persistent)
	if errors.Is(err, regcenter.ErrNodeExists) {
		return nil
	}
	return err
}

// Set writes a node's data if its version matches (-1: any).
func (c *Center) Set(ctx context.Context, p string, data []byte, version int32) (regcenter.Stat, error) {
	if err := backend.CheckNodeSize(backend.MaxNodeBytes(c.cfg), "set", p, data); err != nil {
		return regcenter.Stat{}, err
	}
	cp, err := backend.CleanPath(p)
	if err != nil {
		return regcenter.Stat{}, err
	}
	res, err := c.write(ctx, &c.counters.writes, false, []regcenter.Op{regcenter.SetOp{Path: cp, Data: data, Version: version}})
	if err != nil {
		return regcenter.Stat{}, backend.WrapPath("set", p, opErr(err))
	}
	return res.stat, nil
}

// Delete removes a node if its version matches (-1: any).
func (c *Center) Delete(ctx context.Context, p string, version int32) error {
	cp, err := backend.CleanPath(p)
	if err != nil {
		return err
	}
	_, err = c.write(ctx, &c.counters.writes, false, []regcenter.Op{regcenter.DeleteOp{Path: cp, Version: version}})
	return backend.WrapPath("delete", p, opErr(err))
}

// DeleteTree removes a node and everything below it, deepest first. A
// missing node is not an error.
func (c *Center) DeleteTree(ctx context.Context, p string) error {
	return backend.DeleteTree(ctx, c, p)
}

// Multi applies ops atomically, in order, as one statement in one
// transaction; when one fails the error is a *regcenter.MultiError naming
// it, and nothing was applied.
func (c *Center) Multi(ctx context.Context, ops ...regcenter.Op) error {
	if len(ops) == 0 {
		return nil
	}
	if err := backend.CheckMultiSize(backend.MaxNodeBytes(c.cfg), ops); err != nil {
		return err
	}
	clean, err := backend.CleanOps(ops, backend.CleanPath)
	if err != nil {
		return err
	}
	for _, op := range ops {
		if _, check := op.(regcenter.CheckOp); !check {
			c.counters.multiWrites.Add(1)
		}
	}
	_, err = c.write(ctx, &c.counters.multis, false, clean)
	if err != nil {
		var f *opFailure
		if errors.As(err, &f) && f.index >= 0 && f.index < len(ops) {
			return &regcenter.MultiError{Index: f.index, Op: ops[f.index], Err: f.err}
		}
		return fmt.Errorf("regcenter: transaction of %d ops: %w", len(ops), err)
	}
	return nil
}
