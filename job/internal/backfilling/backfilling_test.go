package backfilling

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/backfill"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
)

// everyMinute fires on each minute.
type everyMinute struct{}

func (everyMinute) Next(t time.Time) time.Time { return t.Truncate(time.Minute).Add(time.Minute) }

// TestOnARealRegistry runs the registry's work and the hand-off on a
// real ZooKeeper.
func TestOnARealRegistry(t *testing.T) {
	ctx, rc := roomtest.ZooKeeper(t, "backfilling")
	t.Run("registry", func(t *testing.T) { testRegistry(ctx, t, rc) })
	t.Run("hand-off", func(t *testing.T) { testHandOff(t, rc.Session()) })
}

// testRegistry: the request is read (none, one, one that
// does not decode: reported, read as none); the next fires group this
// instance's items, their unknown progress read and the missing nodes
// made (garbage reported, started again; known progress not read again);
// the other servers are told; the backfill is through once every item
// not disabled has run the range; a recheck settles an item whose
// progress lists the fire and returns the versions read.
func testRegistry(ctx context.Context, t *testing.T, rc regcenter.Center) {
	paths := layout.Job("j")
	var known backfill.Known
	var reported []string
	g := &Registry{RC: rc, Paths: paths, ServerID: "s1", Known: &known, Log: slog.New(slog.DiscardHandler),
		Report: func(p string, _ regcenter.Stat, _ []byte, _ string, _ ...any) { reported = append(reported, p) }}
	put := func(p string, data []byte) {
		t.Helper()
		if err := rc.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := rc.Set(ctx, p, data, -1); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(p string) bool {
		t.Helper()
		return roomtest.Exists(t, ctx, rc, p)
	}

	// The request.
	if _, ok, err := g.ReadRequest(ctx); ok || err != nil {
		t.Fatalf("no request: ok %v, err %v; want none", ok, err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	req := backfill.Request{ID: "b1", From: t0.UnixMilli(), To: t0.Add(2 * time.Minute).UnixMilli(), Rate: 10, State: backfill.Running}
	put(paths.Backfill(), req.Encode())
	if got, ok, err := g.ReadRequest(ctx); !ok || err != nil || got != req {
		t.Fatalf("a request: %+v, ok %v, err %v; want %+v", got, ok, err, req)
	}
	put(paths.Backfill(), []byte("{not json"))
	if _, ok, err := g.ReadRequest(ctx); ok || err != nil {
		t.Fatalf("a request that does not decode: ok %v, err %v; want none", ok, err)
	}
	if !slices.Equal(reported, []string{paths.Backfill()}) {
		t.Fatalf("a request that does not decode: reported %v; want its node", reported)
	}
	reported = nil
	put(paths.Backfill(), req.Encode())

	// The next fires: items 0 (no node), 1 (through t0), 2 (garbage) are
	// this instance's; 3 is disabled, 7 is not an item of the 5.
	put(paths.BackfillItem(1), backfill.Progress{ID: "b1", Through: t0.UnixMilli()}.Encode())
	put(paths.BackfillItem(2), []byte("garbage"))
	sched := everyMinute{}
	groups, mine, err := g.Next(ctx, req, sched, []int{0, 1, 2, 3, 7}, map[int]bool{3: true}, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64][]int{t0.UnixMilli(): {0, 2}, t0.Add(time.Minute).UnixMilli(): {1}}
	if !maps.EqualFunc(byMillis(groups), want, slices.Equal) || !slices.Equal(mine, []int{0, 1, 2}) {
		t.Fatalf("next: %v, mine %v; want %v, mine [0 1 2]", groups, mine, want)
	}
	if !exists(paths.BackfillItem(0)) || exists(paths.BackfillItem(3)) {
		t.Fatalf("next: item 0's progress node made %v, disabled item 3's %v; want made, not made", exists(paths.BackfillItem(0)), exists(paths.BackfillItem(3)))
	}
	if !slices.Equal(reported, []string{paths.BackfillItem(2)}) {
		t.Fatalf("next: reported %v; want item 2's progress node", reported)
	}
	if p, ok := known.Of(2, "b1"); !ok || p.Through != 0 {
		t.Fatalf("next: item 2 known as %+v, %v; want started again", p, ok)
	}
	// Known progress is not read again: item 1's node says more.
	put(paths.BackfillItem(1), backfill.Progress{ID: "b1", Through: t0.Add(2 * time.Minute).UnixMilli()}.Encode())
	known.Ran(0, "b1", t0)
	groups, _, err = g.Next(ctx, req, sched, []int{0, 1, 2}, nil, 5)
	if want := []int{0, 1}; err != nil || !slices.Equal(byMillis(groups)[t0.Add(time.Minute).UnixMilli()], want) {
		t.Fatalf("next with progress known: %v, %v; want %v at the second fire", groups, err, want)
	}

	// The other servers told.
	for _, id := range []string{"s1", "s2", "s3"} {
		if err := rc.EnsurePath(ctx, paths.Server(id)); err != nil {
			t.Fatal(err)
		}
	}
	g.TellServers(ctx)
	if exists(paths.Flag("s1", layout.BackfillFlag)) || !exists(paths.Flag("s2", layout.BackfillFlag)) || !exists(paths.Flag("s3", layout.BackfillFlag)) {
		t.Fatal("told: want the flags of s2 and s3, not s1's")
	}

	// Through: every item but the disabled ones.
	through := backfill.Progress{ID: "b1", Through: req.To}.Encode()
	for it := range 3 {
		put(paths.BackfillItem(it), through)
	}
	if !g.Through(ctx, req, sched, 5, map[int]bool{3: true, 4: true}) {
		t.Fatal("through: items 0-2 ran the range, 3 and 4 disabled; want through")
	}
	if g.Through(ctx, req, sched, 5, map[int]bool{3: true}) {
		t.Fatal("through: item 4 has no progress; want not through")
	}
	put(paths.BackfillItem(4), backfill.Progress{ID: "b0", Through: req.To}.Encode())
	if g.Through(ctx, req, sched, 5, map[int]bool{3: true}) {
		t.Fatal("through: item 4's progress is another request's; want not through")
	}
	// A range with no fire: an item whose node does not decode is not
	// through.
	none := backfill.Request{ID: "b1", From: t0.Add(time.Second).UnixMilli(), To: t0.Add(2 * time.Second).UnixMilli(), Rate: 10, State: backfill.Running}
	if !g.Through(ctx, none, sched, 5, map[int]bool{3: true}) {
		t.Fatal("through: a range with no fire, every progress node decoding; want through")
	}
	put(paths.BackfillItem(2), []byte("garbage"))
	if g.Through(ctx, none, sched, 5, map[int]bool{3: true}) {
		t.Fatal("through: item 2's progress node does not decode; want not through")
	}

	// The recheck of the fire t0+1m: item 0 ran it elsewhere, 1 ran only
	// t0, 4's progress is another request's, 3 has no node.
	at := t0.Add(time.Minute)
	put(paths.BackfillItem(0), backfill.Progress{ID: "b1", Through: at.UnixMilli()}.Encode())
	put(paths.BackfillItem(1), backfill.Progress{ID: "b1", Through: t0.UnixMilli()}.Encode())
	known.Forget()
	keep, ran, versions := g.Recheck(ctx, "b1", at, []int{0, 1, 3, 4})
	if !slices.Equal(keep, []int{1, 3, 4}) || !slices.Equal(ran, []int{0}) {
		t.Fatalf("recheck: keep %v, ran %v; want keep [1 3 4], ran [0]", keep, ran)
	}
	for _, it := range []int{0, 1, 4} {
		_, st, err := rc.Get(ctx, paths.BackfillItem(it))
		if err != nil {
			t.Fatal(err)
		}
		if versions[it] != st.Version {
			t.Fatalf("recheck: item %d's version %d; want %d", it, versions[it], st.Version)
		}
	}
	if v, ok := versions[3]; !ok || v != -1 {
		t.Fatalf("recheck: item 3's version %d, %v; want -1 (no node)", v, ok)
	}
	if p, ok := known.Of(0, "b1"); !ok || p.Through != at.UnixMilli() {
		t.Fatalf("recheck: item 0 known as %+v, %v; want through the fire", p, ok)
	}
}

// byMillis is groups by their fires' ms, each group sorted.
func byMillis(groups map[time.Time][]int) map[int64][]int {
	out := make(map[int64][]int, len(groups))
	for at, items := range groups {
		out[at.UnixMilli()] = slices.Sorted(slices.Values(items))
	}
	return out
}

// testHandOff: a waiting fire is served the released
// items it wants (reserved by its own reserve), not others', and only
// once; a waiter removed is not served.
func testHandOff(t *testing.T, sess *regcenter.Session) {
	var ws Waiters
	var mu sync.Mutex
	asked := map[string][][]int{}
	reserver := func(name string, first chan<- struct{}) func([]int) []int {
		n := 0
		return func(items []int) []int {
			mu.Lock()
			defer mu.Unlock()
			asked[name] = append(asked[name], slices.Clone(items))
			if n++; n == 1 {
				if first != nil {
					close(first)
				}
				return nil // held here: the fire waits
			}
			return items
		}
	}
	aTried, bTried := make(chan struct{}), make(chan struct{})
	aGot, bGot := make(chan []int, 1), make(chan []int, 1)
	go func() { aGot <- ws.Reserve(context.Background(), sess, []int{1, 2, 3}, reserver("a", aTried)) }()
	go func() { bGot <- ws.Reserve(context.Background(), sess, []int{7}, reserver("b", bTried)) }()
	<-aTried
	<-bTried
	ws.Hand([]int{2, 5, 1})
	select {
	case got := <-aGot:
		if !slices.Equal(got, []int{2, 1}) {
			t.Fatalf("a waiter for 1-3 served %v; want [2 1] (the released items it wants)", got)
		}
	case <-time.After(Tries / 2):
		t.Fatal("a waiter for 1-3 was not served items 1 and 2")
	}
	ws.Hand([]int{1, 3})
	mu.Lock()
	if want := [][]int{{1, 2, 3}, {2, 1}}; !slices.EqualFunc(asked["a"], want, slices.Equal) {
		t.Fatalf("a waiter's reserve asked for %v; want %v (served once)", asked["a"], want)
	}
	if want := [][]int{{7}}; !slices.EqualFunc(asked["b"], want, slices.Equal) {
		t.Fatalf("a waiter for 7 asked for %v; want only its own try %v", asked["b"], want)
	}
	mu.Unlock()
	// b is served nothing: it goes after Tries, and is not served after.
	if got := <-bGot; len(got) != 0 {
		t.Fatalf("a waiter for 7 got %v; want nothing", got)
	}
	ws.Hand([]int{7})
	mu.Lock()
	if want := [][]int{{7}}; !slices.EqualFunc(asked["b"], want, slices.Equal) {
		t.Fatalf("a removed waiter's reserve asked for %v; want only its own try %v", asked["b"], want)
	}
	mu.Unlock()
	// Items handed over during the first try, before the waiter goes, run
	// with the fire (sorted); the waiter served is served no more.
	tried, unblock, dGot := make(chan struct{}), make(chan struct{}), make(chan []int, 1)
	first := true
	go func() {
		dGot <- ws.Reserve(context.Background(), sess, []int{4, 5, 6}, func(items []int) []int {
			mu.Lock()
			asked["d"] = append(asked["d"], slices.Clone(items))
			wasFirst := first
			first = false
			mu.Unlock()
			if wasFirst {
				close(tried)
				<-unblock
				return []int{6}
			}
			return items
		})
	}()
	<-tried
	ws.Hand([]int{5})
	ws.Hand([]int{4})
	close(unblock)
	if got := <-dGot; !slices.Equal(got, []int{5, 6}) {
		t.Fatalf("a fire served during its first try: %v; want [5 6]", got)
	}
	mu.Lock()
	if want := [][]int{{4, 5, 6}, {5}}; !slices.EqualFunc(asked["d"], want, slices.Equal) {
		t.Fatalf("a fire served during its first try: its reserve asked for %v; want %v", asked["d"], want)
	}
	mu.Unlock()
	// A fire whose context ends stops waiting at once, and is removed.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	start := time.Now()
	if got := ws.Reserve(cctx, sess, []int{9}, reserver("c", nil)); len(got) != 0 || time.Since(start) >= Tries {
		t.Fatalf("a fire stopped: got %v after %v; want nothing at once", got, time.Since(start))
	}
	ws.Hand([]int{9})
	mu.Lock()
	defer mu.Unlock()
	if want := [][]int{{9}}; !slices.EqualFunc(asked["c"], want, slices.Equal) {
		t.Fatalf("a stopped fire's reserve asked for %v; want only its own try %v", asked["c"], want)
	}
}
