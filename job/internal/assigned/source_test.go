package assigned

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// releaser notes the items of each ReleaseUnassigned.
type releaser struct {
	mu    sync.Mutex
	items [][]int
}

func (r *releaser) ReleaseUnassigned(_ context.Context, _ *regcenter.Session, items []int) {
	r.mu.Lock()
	r.items = append(r.items, slices.Clone(items))
	r.mu.Unlock()
}

func (r *releaser) last() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.items) == 0 {
		return nil
	}
	return r.items[len(r.items)-1]
}

// eventually polls cond for up to ten seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
	}
}

// TestSourceOnARealRegistry: Get reads the assignment, releases the marks
// of what it does not list and stores it as the next assumption, armed
// with the idle watch once and, with items, the epoch watch; an assumption
// read after both watches answered is watched; the epoch's event drops it;
// a read an event overtook, or one whose reshard timed out, stores
// nothing; Prove drops an assumption it finds moved; an unmonitored job
// with no items watches the epoch, a monitored one does not; the idle
// watch's event owes a catch-up only after a fire passed idle, and only
// for a node created or written; NoteEpochFlag moves the epoch for a flag
// set by hand.
func TestSourceOnARealRegistry(t *testing.T) {
	zc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: "source"}, regcenter.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	paths := layout.Job("j")
	node := paths.Flag("s1", layout.Sharding)
	if err := rc.EnsurePath(ctx, paths.ShardingEpoch()); err != nil {
		t.Fatal(err)
	}
	if err := rc.EnsurePath(ctx, node); err != nil {
		t.Fatal(err)
	}
	set := func(p, v string) {
		t.Helper()
		if _, err := rc.Set(ctx, p, []byte(v), -1); err != nil {
			t.Fatal(err)
		}
	}
	set(node, "1,2")

	rs := &resharder{}
	held := &releaser{}
	var cache assume.Cache
	var unmonitored atomic.Bool
	var releads, arms, catchUps atomic.Int64
	timeout := time.Minute
	sess := rc.Session()
	var src *Source
	src = &Source{
		Reader:  &Reader{RC: rc, Paths: paths, Server: "s1", Reshard: rs, Log: slog.New(slog.DiscardHandler), Quote: func(s string) string { return s }},
		Cache:   &cache,
		Held:    held,
		Timeout: timeout,
		Coord: func(s *regcenter.Session) (context.Context, context.CancelFunc) {
			return context.WithTimeout(s.Ctx(), timeout)
		},
		Unmonitored: unmonitored.Load,
		Relead:      func() { releads.Add(1) },
		ArmIdle: func() func() {
			arms.Add(1)
			return rc.Watch(node, regcenter.WatchNode, func(ev regcenter.Event) {
				if src.IdleEvent(ev) {
					catchUps.Add(1)
				}
			})
		},
	}
	get := func() assume.Assignment {
		t.Helper()
		a, err := src.Get(sess)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	assumed := func() (assume.Assignment, bool) { return cache.Assumed(sess) }
	// watched reads until the assumption stored is proved by the watches.
	watched := func(what string) assume.Assignment {
		t.Helper()
		var a assume.Assignment
		eventually(t, what, func() bool {
			get()
			var ok bool
			a, ok = assumed()
			return ok && a.Watched
		})
		return a
	}

	a := get()
	if !slices.Equal(a.Items, []int{1, 2}) || !slices.Equal(held.last(), []int{1, 2}) {
		t.Fatalf("first read: items %v, released all but %v; want [1 2], [1 2]", a.Items, held.last())
	}
	if got, ok := assumed(); !ok || !slices.Equal(got.Items, []int{1, 2}) || !slices.Equal(got.Proof, a.Checks(paths, "s1")) {
		t.Fatalf("first read stored %+v, %v; want the items and their checks", got, ok)
	}
	before := releads.Load()
	watched("an assumption proved by both watches")
	if arms.Load() != 1 {
		t.Fatalf("the idle watch was armed %d times; want once", arms.Load())
	}
	if releads.Load() == before {
		t.Fatal("an assumption now proved by watches told the trigger nothing")
	}

	// The epoch's event drops the assumption, and tells the trigger.
	before = releads.Load()
	set(paths.ShardingEpoch(), "")
	eventually(t, "the epoch's event drops the assumption", func() bool { _, ok := assumed(); return !ok })
	if releads.Load() != before+1 {
		t.Fatalf("the epoch's event dropped a watched assumption: %d releads; want 1", releads.Load()-before)
	}

	// Prove: a stale proof fails and drops the assumption now stored.
	stale := watched("the assumption after the epoch moved")
	set(paths.ShardingEpoch(), "")
	eventually(t, "the epoch's event", func() bool { _, ok := assumed(); return !ok })
	fresh := get()
	if ok, err := src.Prove(sess, fresh.Proof); err != nil || !ok {
		t.Fatalf("a fresh proof: %v, %v", ok, err)
	}
	if _, ok := assumed(); !ok {
		t.Fatal("a proof that held dropped the assumption")
	}
	if ok, err := src.Prove(sess, stale.Proof); err != nil || ok {
		t.Fatalf("a stale proof: %v, %v", ok, err)
	}
	if _, ok := assumed(); ok {
		t.Fatal("a proof that failed kept the assumption")
	}

	// An event during the read: nothing stored.
	rs.fix = func(context.Context) error { cache.EpochEvent(); return nil }
	get()
	if _, ok := assumed(); ok {
		t.Fatal("a read an event overtook was stored")
	}
	// A reshard that does not finish in time: the stored assignment,
	// unproved, and nothing stored; a reshard that fails: its error.
	timeout = 200 * time.Millisecond
	rs.fix = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	if a := get(); a.Epoch != Unproved || !slices.Equal(a.Items, []int{1, 2}) {
		t.Fatalf("after a reshard timed out: %+v; want the items, unproved", a)
	}
	if _, ok := assumed(); ok {
		t.Fatal("an unproved read was stored")
	}
	boom := errors.New("boom")
	rs.fix = func(context.Context) error { return boom }
	if _, err := src.Get(sess); !errors.Is(err, boom) {
		t.Fatalf("a failed reshard: %v; want boom", err)
	}
	timeout, rs.fix = time.Minute, nil

	// No items, monitored: the epoch is not watched.
	set(node, "")
	eventually(t, "no items", func() bool { return len(get().Items) == 0 })
	watched("no items, watched")
	set(paths.ShardingEpoch(), "")
	time.Sleep(500 * time.Millisecond)
	if _, ok := assumed(); !ok {
		t.Fatal("a monitored job with no items watches the epoch")
	}
	// Unmonitored: it is.
	unmonitored.Store(true)
	watched("no items, unmonitored, watched")
	set(paths.ShardingEpoch(), "")
	eventually(t, "an unmonitored job's epoch event", func() bool { _, ok := assumed(); return !ok })

	// The idle watch's event drops a watched assumption, and tells the
	// trigger.
	watched("before an idle event")
	before = releads.Load()
	src.IdleEvent(regcenter.Event{Type: regcenter.EventDataChanged})
	if _, ok := assumed(); ok || releads.Load() != before+1 {
		t.Fatalf("an idle event: assumption kept %v, releads %d; want dropped, %d", ok, releads.Load(), before+1)
	}
	// A catch-up after a fire passed idle, for a node written.
	for _, c := range []struct {
		ev     regcenter.EventType
		passed bool
		want   bool
	}{
		{regcenter.EventDataChanged, true, true},
		{regcenter.EventCreated, true, true},
		{regcenter.EventDeleted, true, false},
		{regcenter.EventResync, true, false},
		{regcenter.EventDataChanged, false, false},
	} {
		cache.NotePass(time.Time{})
		if c.passed {
			cache.NotePass(time.Now())
		}
		if got := src.IdleEvent(regcenter.Event{Type: c.ev}); got != c.want {
			t.Fatalf("IdleEvent(%v) after a pass %v: %v; want %v", c.ev, c.passed, got, c.want)
		}
	}
	cache.NotePass(time.Now())
	set(node, "3")
	eventually(t, "the idle watch's catch-up", func() bool { return catchUps.Load() == 1 })

	// Forget tells the trigger when the assumption was proved by watches.
	watched("before Forget")
	before = releads.Load()
	src.Forget()
	if _, ok := assumed(); ok || releads.Load() != before+1 {
		t.Fatalf("Forget: assumption kept %v, releads %d; want dropped, %d", ok, releads.Load(), before+1)
	}

	// A reshard flag created by hand: the epoch moves.
	if _, err := rc.Create(ctx, paths.Necessary(), nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	_, e0, _ := rc.Exists(ctx, paths.ShardingEpoch())
	src.NoteEpochFlag()
	if _, e1, _ := rc.Exists(ctx, paths.ShardingEpoch()); e1.Version != e0.Version+1 {
		t.Fatalf("NoteEpochFlag: epoch version %d; want %d", e1.Version, e0.Version+1)
	}
}
