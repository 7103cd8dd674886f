package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/regcenter"
)

// failoverTimeout is the session timeout of the failover tests' centers:
// the fencing lease (two thirds of it) must outlast a stop and a promotion
// on a loaded machine running -race.
const failoverTimeout = 15 * time.Second

// pair starts a primary and a standby of it, closed when tb ends, and
// returns them with the URL that lists both and asks for the writable one.
func pair(tb testing.TB, r pgtest.Replication) (primary, standby *pgtest.Server, url string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := pgtest.Start
	if r == pgtest.Synchronous {
		start = pgtest.StartCrashSafe // its commits wait, for the standby too
	}
	primary, err := start(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := primary.Close(); err != nil {
			tb.Errorf("closing the primary: %v", err)
		}
	})
	standby, err = primary.StartStandby(ctx, r)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := standby.Close(); err != nil {
			tb.Errorf("closing the standby: %v", err)
		}
	})
	url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		primary.Port, standby.Port)
	return primary, standby, url
}

// watchLog records a watch's events for a test to wait on.
type watchLog struct {
	mu  sync.Mutex
	evs []regcenter.Event
	ch  chan struct{}
}

func newWatchLog() *watchLog { return &watchLog{ch: make(chan struct{}, 1)} }

func (w *watchLog) add(e regcenter.Event) {
	w.mu.Lock()
	w.evs = append(w.evs, e)
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (w *watchLog) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.evs)
}

// await waits up to a minute for an event from the from-th on that ok
// accepts, and returns it.
func (w *watchLog) await(tb testing.TB, from int, what string, ok func(regcenter.Event) bool) regcenter.Event {
	tb.Helper()
	deadline := time.After(time.Minute)
	for {
		w.mu.Lock()
		for _, e := range w.evs[min(from, len(w.evs)):] {
			if ok(e) {
				w.mu.Unlock()
				return e
			}
		}
		w.mu.Unlock()
		select {
		case <-w.ch:
		case <-deadline:
			w.mu.Lock()
			defer w.mu.Unlock()
			tb.Fatalf("no %s within a minute; the watch got %v", what, w.evs)
		}
	}
}

func (w *watchLog) resyncs() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, e := range w.evs {
		if e.Type == regcenter.EventResync {
			n++
		}
	}
	return n
}

// firstWrite sets path until a write succeeds, and returns when it did.
// Between attempts it waits a little; the write's success is the event.
func firstWrite(tb testing.TB, c regcenter.Center, path string) time.Time {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), failoverTimeout)
		_, err := c.Set(ctx, path, []byte("after"), -1)
		cancel()
		if err == nil {
			return time.Now()
		}
		if !errors.Is(err, regcenter.ErrConnectionLoss) {
			tb.Fatalf("a write during the failover: %v, want success or ErrConnectionLoss", err)
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no write succeeded within a minute of the failover: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A registry on a primary with a synchronous standby, opened with a URL
// that lists both: the primary stopped (or killed), the standby promoted
// within the session timeout, the center goes on on the promoted server
// without losing its session, its ephemeral node or any write it saw
// acknowledged, and its watches miss nothing.
func TestFailoverToASynchronousStandby(t *testing.T) {
	for _, how := range []string{"stop", "kill"} {
		t.Run(how, func(t *testing.T) {
			primary, standby, url := pair(t, pgtest.Synchronous)
			c := newCenter(t, url, regcenter.Config{Namespace: "failover", SessionTimeout: failoverTimeout})
			ctx := ctxFor(t)
			if _, err := c.Create(ctx, "/owned", []byte("mine"), regcenter.Ephemeral); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Create(ctx, "/w", nil, regcenter.Persistent); err != nil {
				t.Fatal(err)
			}
			wl := newWatchLog()
			_, cancel, err := c.WatchNow(ctx, "/w", regcenter.WatchNode, wl.add)
			if err != nil {
				t.Fatal(err)
			}
			defer cancel()
			// Acknowledged writes, and the watch hears of the last one.
			var last regcenter.Stat
			for i := range 20 {
				if last, err = c.Set(ctx, "/w", []byte(fmt.Sprint(i)), -1); err != nil {
					t.Fatal(err)
				}
			}
			wl.await(t, 0, "event for the writes before the failover", func(e regcenter.Event) bool { return e.Type == regcenter.EventDataChanged })
			first := c.Session()
			evs := record(c, t)

			stopped := time.Now()
			stop := primary.Stop
			if how == "kill" {
				stop = primary.Kill
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			pctx, pcancel := context.WithTimeout(context.Background(), time.Minute)
			defer pcancel()
			if err := standby.Promote(pctx); err != nil {
				t.Fatal(err)
			}
			promoted := time.Now()
			mark := wl.len()
			wrote := firstWrite(t, c, "/w")
			t.Logf("%s: the primary's %s to the promotion: %v; to the first write on the promoted server: %v",
				how, how, promoted.Sub(stopped).Round(time.Millisecond), wrote.Sub(stopped).Round(time.Millisecond))

			// (a) The session goes on: the same one, never lost; if a
			// heartbeat failed meanwhile, it is reconnected.
			if slices.Contains(evs.types(), regcenter.SessionSuspended) {
				evs.await(t, 0, regcenter.SessionReconnected)
			}
			if got := evs.types(); slices.Contains(got, regcenter.SessionLost) || slices.Contains(got, regcenter.SessionNew) {
				t.Errorf("session events %v: the session ended in a failover shorter than its timeout", got)
			}
			if c.Session() != first || first.Check() != nil {
				t.Errorf("session %v (check %v), want the first one %v, live", c.Session(), first.Check(), first)
			}
			if !c.HeartbeatNow() {
				t.Error("a heartbeat on the promoted server was not answered")
			}
			data, st, err := c.Get(ctx, "/owned")
			if err != nil || st.EphemeralOwner != first.ID() || string(data) != "mine" {
				t.Errorf("the ephemeral node on the promoted server: %q %+v, %v; want it, owned by 0x%x", data, st, err, first.ID())
			}
			// The change made after the promotion reaches the watch, or a
			// resync that covers it: never nothing.
			e := wl.await(t, mark, "event for the write after the promotion", func(e regcenter.Event) bool {
				return e.Type == regcenter.EventDataChanged || e.Type == regcenter.EventResync
			})
			t.Logf("%s: the watch's first event after the failover: %v (%d resyncs in all)", how, e.Type, wl.resyncs())
			// And a change after that, as a watch on any server gets it.
			mark = wl.len()
			if _, err := c.Set(ctx, "/w", []byte("later"), -1); err != nil {
				t.Fatal(err)
			}
			wl.await(t, mark, "data changed event for a later write", func(e regcenter.Event) bool { return e.Type == regcenter.EventDataChanged })

			// (b) Every write acknowledged before the primary stopped is
			// there: the 20 sets, then the one after the promotion.
			_, st, err = c.Get(ctx, "/w")
			if err != nil {
				t.Fatal(err)
			}
			if st.Version != last.Version+2 || st.Mzxid <= last.Mzxid {
				t.Errorf("/w on the promoted server: version %d, mzxid %d; want %d and past %d (the acknowledged sets, then two)",
					st.Version, st.Mzxid, last.Version+2, last.Mzxid)
			}
		})
	}
}

// detach stops a standby's replication (its primary_conninfo emptied) and
// waits until the primary no longer streams to it: what the primary
// commits from then on stays on the primary, as with an asynchronous
// standby that lags.
func detach(tb testing.TB, primary, standby *pgtest.Server) {
	tb.Helper()
	ctx := ctxFor(tb)
	sb, err := pgx.Connect(ctx, standby.DSN)
	if err != nil {
		tb.Fatal(err)
	}
	defer sb.Close(ctx)
	for _, q := range []string{"ALTER SYSTEM SET primary_conninfo = ''", "SELECT pg_reload_conf()"} {
		if _, err := sb.Exec(ctx, q); err != nil {
			tb.Fatal(err)
		}
	}
	p, err := pgx.Connect(ctx, primary.DSN)
	if err != nil {
		tb.Fatal(err)
	}
	defer p.Close(ctx)
	for {
		var n int
		if err := p.QueryRow(ctx, "SELECT count(*) FROM pg_stat_replication").Scan(&n); err != nil {
			tb.Fatal(err)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatal("the primary still streams to the detached standby")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// With an asynchronous standby, a failover loses what the primary had
// acknowledged and not yet sent. What the center then does: the writes
// are gone; a session whose row had reached the standby goes on (its
// ephemeral nodes made since are gone, and it is not told); one whose row
// had not is lost and made again (SessionLost, SessionNew); a watch is
// resynchronised and hears the changes made on the promoted server, also
// those that reuse the lost revisions.
func TestFailoverToAnAsynchronousStandbyLosesCommits(t *testing.T) {
	primary, standby, url := pair(t, pgtest.Asynchronous)
	ctx := ctxFor(t)
	a := newCenter(t, url, regcenter.Config{Namespace: "async", SessionTimeout: failoverTimeout})
	if _, err := a.Create(ctx, "/w", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx, "/kept", nil, regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	// The standby has all of that once its replay reaches the primary's
	// position.
	waitReplayed(t, primary, standby)
	detach(t, primary, standby)

	b := newCenter(t, url, regcenter.Config{Namespace: "async", SessionTimeout: failoverTimeout})
	wl := newWatchLog()
	_, cancel, err := a.WatchNow(ctx, "/w", regcenter.WatchNode, wl.add)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if _, err := a.Create(ctx, "/lost", nil, regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := a.Set(ctx, "/w", []byte(fmt.Sprint(i)), -1); err != nil {
			t.Fatal(err)
		}
	}
	wl.await(t, 0, "event for the writes the standby never got", func(e regcenter.Event) bool { return e.Type == regcenter.EventDataChanged })
	aFirst, bFirst := a.Session(), b.Session()
	aEvs, bEvs := record(a, t), record(b, t)

	// The watch reader is held until the promoted server is written past
	// the revisions that were lost: a reader that trusted its position
	// would then skip the changes that reuse them, without a resync.
	resume := sync.OnceFunc(a.PauseWatches())
	defer resume()
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), time.Minute)
	defer pcancel()
	if err := standby.Promote(pctx); err != nil {
		t.Fatal(err)
	}
	mark := wl.len()
	firstWrite(t, a, "/w")
	for i := range 10 {
		if _, err := a.Set(ctx, "/w", []byte(fmt.Sprint("again ", i)), -1); err != nil {
			t.Fatal(err)
		}
	}
	resume()
	if e := wl.await(t, mark, "resync after the failover", func(e regcenter.Event) bool { return e.Type == regcenter.EventResync }); e.Path != "/w" {
		t.Errorf("resync for %q, want /w", e.Path)
	}
	mark = wl.len()
	if _, err := a.Set(ctx, "/w", []byte("last"), -1); err != nil {
		t.Fatal(err)
	}
	wl.await(t, mark, "data changed event after the resync", func(e regcenter.Event) bool { return e.Type == regcenter.EventDataChanged })

	// The acknowledged writes are gone.
	if data, _, err := a.Get(ctx, "/w"); err != nil || string(data) != "last" {
		t.Fatalf("/w: %q, %v", data, err)
	}
	if ok, _, err := a.Exists(ctx, "/lost"); err != nil || ok {
		t.Errorf("an ephemeral node the standby never got: exists %v, %v; want it gone", ok, err)
	}
	// a's session row was replicated: it goes on, its older node with it.
	if !a.HeartbeatNow() || a.Session() != aFirst || slices.Contains(aEvs.types(), regcenter.SessionLost) {
		t.Errorf("the replicated session: now %v (events %v), want %v going on", a.Session(), aEvs.types(), aFirst)
	}
	if _, st, err := a.Get(ctx, "/kept"); err != nil || st.EphemeralOwner != aFirst.ID() {
		t.Errorf("the replicated ephemeral node: %+v, %v", st, err)
	}
	// b's was not: b loses it and gets a new one, whatever its id.
	_, lost := bEvs.await(t, 0, regcenter.SessionLost)
	_, fresh := bEvs.await(t, 0, regcenter.SessionNew)
	if lost.Session != bFirst || fresh.Session == bFirst || b.Session() != fresh.Session {
		t.Errorf("the session the standby never got: lost %v, new %v, current %v; want %v lost and a new one current",
			lost.Session, fresh.Session, b.Session(), bFirst)
	}
	t.Logf("session ids: a 0x%x kept; b 0x%x lost, then 0x%x", aFirst.ID(), bFirst.ID(), fresh.Session.ID())
}

// waitReplayed waits until the standby has replayed the primary's WAL up
// to the primary's current insert position: with synchronous_commit off
// (pgtest.Start), a commit's WAL may still be in the primary's buffers,
// behind pg_current_wal_lsn, which is where it has been written to.
func waitReplayed(tb testing.TB, primary, standby *pgtest.Server) {
	tb.Helper()
	ctx := ctxFor(tb)
	p, err := pgx.Connect(ctx, primary.DSN)
	if err != nil {
		tb.Fatal(err)
	}
	defer p.Close(ctx)
	var lsn string
	if err := p.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		tb.Fatal(err)
	}
	sb, err := pgx.Connect(ctx, standby.DSN)
	if err != nil {
		tb.Fatal(err)
	}
	defer sb.Close(ctx)
	for {
		var done bool
		if err := sb.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&done); err != nil {
			tb.Fatal(err)
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("the standby did not replay up to %s", lsn)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
