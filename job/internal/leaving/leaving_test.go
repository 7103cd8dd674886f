package leaving

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/flags"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// every fires at each multiple of d.
type every time.Duration

func (e every) Next(t time.Time) time.Time { return t.Truncate(time.Duration(e)).Add(time.Duration(e)) }

// TestLeaveOnARealRegistry: a leave that hands over clears the
// assignment, drops the status, flags a reshard and queues the runs owed
// for the items held — the latest fire for those no fire took, an earlier
// debt kept, a disabled item left out — in one transaction, tells the
// book, and repairs the load table; the rest owed once the runs ended is
// queued after, once. A leave of a job removed from the cluster flags no
// reshard, hands nothing over and repairs nothing; nor does one that gave
// up no item repair, unless the books are behind a departure its reshard
// cleared. A paused server owes no latest fire.
func TestLeaveOnARealRegistry(t *testing.T) {
	zc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: "leaving"}, regcenter.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	paths := layout.Job("j")
	now := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	upTo := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	job := book.Job{Items: 6, Schedule: every(time.Minute)}
	register := func(server, items string) {
		t.Helper()
		if err := rc.EnsurePath(ctx, paths.Flag(server, layout.Status)); err != nil {
			t.Fatal(err)
		}
		if err := rc.EnsurePath(ctx, paths.Flag(server, layout.Sharding)); err != nil {
			t.Fatal(err)
		}
		if _, err := rc.Set(ctx, paths.Flag(server, layout.Sharding), []byte(items), -1); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(p string) bool {
		t.Helper()
		return roomtest.Exists(t, ctx, rc, p)
	}
	queued := func() map[int]failover.Entry {
		t.Helper()
		items, err := failover.NewQueue(rc, "j").Items(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int]failover.Entry{}
		for _, it := range items {
			data, _, err := rc.Get(ctx, paths.FailoverItem(it))
			if err != nil {
				t.Fatal(err)
			}
			var e failover.Entry
			if err := json.Unmarshal(data, &e); err != nil {
				t.Fatal(err)
			}
			out[it] = e
		}
		return out
	}
	unqueue := func() {
		t.Helper()
		for it := range queued() {
			if err := rc.Delete(ctx, paths.FailoverItem(it), -1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := rc.EnsurePath(ctx, paths.ShardingEpoch()); err != nil {
		t.Fatal(err)
	}
	fl := flags.New(rc, paths, "s1", log, 10*time.Second)
	if _, err := rc.Create(ctx, paths.DisabledItems(), []byte("5"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	fl.ReadDisabledItems(rc.Session())
	leaver := func(server string) (*Leaver, *atomic.Int32) {
		var repairs atomic.Int32
		b := book.New(book.NewLedger(), book.Options{Log: log, MisfiresOwed: new(atomic.Int64), Now: func() time.Time { return now }, OnIdle: func() {}})
		return &Leaver{RC: rc, Paths: paths, Job: "j", Server: server, Book: b, Flags: fl, Log: log, Now: func() time.Time { return now },
			Repair: func(context.Context) error { repairs.Add(1); return errors.New("repair fails: logged only") }}, &repairs
	}

	register("s1", "0,2,5")
	l, repairs := leaver("s1")
	since2 := upTo.Add(-3 * time.Minute)
	l.Book.NoteMisfire(job, 2, since2)
	if err := l.Leave(ctx, job, true, true); err != nil {
		t.Fatal(err)
	}
	if data, _, err := rc.Get(ctx, paths.Flag("s1", layout.Sharding)); err != nil || len(data) != 0 {
		t.Fatalf("assignment after leaving: %q, %v", data, err)
	}
	if exists(paths.Flag("s1", layout.Status)) || !exists(paths.Necessary()) {
		t.Fatal("after leaving: the status is still there, or no reshard is flagged")
	}
	q := queued()
	if len(q) != 2 || q[0].Fire != upTo.UnixMilli() || q[2].Fire != since2.UnixMilli() || q[0].From != "s1" {
		t.Fatalf("queued at the leave: %+v; want item 0 since %v, item 2 since %v, from s1", q, upTo, since2)
	}
	if !l.Book.HeldAtLeaveAny() || repairs.Load() != 1 {
		t.Fatalf("the book holds no items given up (%v), or %d repairs; want 1", l.Book.HeldAtLeaveAny(), repairs.Load())
	}

	// The runs ended: a fire in flight noted a debt of item 0; the debts
	// handed over at the leave are not queued again.
	unqueue()
	since0 := upTo.Add(time.Second)
	l.Book.NoteMisfire(job, 0, since0)
	if err := l.HandOverRest(ctx, job); err != nil {
		t.Fatal(err)
	}
	if q := queued(); len(q) != 1 || q[0].Fire != since0.UnixMilli() || q[0].From != "s1" {
		t.Fatalf("queued after the runs: %+v; want item 0 since %v", q, since0)
	}
	unqueue()
	if err := l.HandOverRest(ctx, job); err != nil || len(queued()) != 0 {
		t.Fatalf("the rest handed over twice: %v, %v", queued(), err)
	}

	// Removed from the cluster: no reshard flagged, nothing handed over,
	// no repair.
	if err := rc.Delete(ctx, paths.Necessary(), -1); err != nil {
		t.Fatal(err)
	}
	register("s2", "1,3")
	l, repairs = leaver("s2")
	l.Book.NoteMisfire(job, 1, since2)
	if err := l.Leave(ctx, job, false, false); err != nil {
		t.Fatal(err)
	}
	if exists(paths.Flag("s2", layout.Status)) || exists(paths.Necessary()) || len(queued()) != 0 || repairs.Load() != 0 {
		t.Fatalf("a removed job's leave: status %v, reshard flagged %v, queued %v, %d repairs; want none",
			exists(paths.Flag("s2", layout.Status)), exists(paths.Necessary()), queued(), repairs.Load())
	}
	if !l.Book.HeldAtLeaveAny() {
		t.Fatal("a removed job's leave: the book holds no items given up")
	}

	// Paused: the latest fire is not owed for the items held.
	fl.SetPaused(true)
	register("s4", "4")
	l, _ = leaver("s4")
	if err := l.Leave(ctx, job, true, true); err != nil {
		t.Fatal(err)
	}
	fl.SetPaused(false)
	if q := queued(); len(q) != 0 {
		t.Fatalf("a paused server's leave queued %+v; want nothing", q)
	}

	// Nothing held: no repair.
	register("s3", "")
	l, repairs = leaver("s3")
	if err := l.Leave(ctx, job, true, true); err != nil {
		t.Fatal(err)
	}
	if repairs.Load() != 0 || l.Book.HeldAtLeaveAny() {
		t.Fatalf("a leave that gave up nothing: %d repairs", repairs.Load())
	}

	// Nothing held, but the books behind a departure this instance's
	// reshard cleared: a repair.
	register("s5", "")
	l, repairs = leaver("s5")
	l.BooksBehind = func() bool { return true }
	if err := l.Leave(ctx, job, true, true); err != nil {
		t.Fatal(err)
	}
	if repairs.Load() != 1 {
		t.Fatalf("a leave with the books behind: %d repairs; want 1", repairs.Load())
	}
}
