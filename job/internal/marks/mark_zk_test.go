package marks

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// outcomes records what Mark handed back.
type outcomes struct {
	changed, rechecked, busy, unmarked []int
	leave                              bool
}

func (o *outcomes) RecordChanged(item int) bool {
	o.changed = append(o.changed, item)
	return o.leave
}
func (o *outcomes) Recheck(item int)                    { o.rechecked = append(o.rechecked, item) }
func (o *outcomes) Busy(_ context.Context, items []int) { o.busy = append(o.busy, items...) }
func (o *outcomes) Unmarked(_ context.Context, items []int) {
	o.unmarked = append(o.unmarked, items...)
}

// TestMarkOnARealRegistry: a first fire makes the item nodes; another
// session's mark makes its item busy (handed back, not marked); a
// persistent mark, which no instance writes, is removed and its item
// rechecked; a record changed since known is reported; a failed check of
// the assignment ends the marking with assume.ErrMoved and marks nothing.
func TestMarkOnARealRegistry(t *testing.T) {
	zc := zktest.Start(t)
	rc, other := roomtest.Open(t, zc.Servers(), "marks"), roomtest.Open(t, zc.Servers(), "marks")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	paths := layout.Job("j")
	for _, it := range []int{1, 2, 4} {
		if err := other.EnsurePath(ctx, paths.Item(it)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.Create(ctx, paths.ItemNode(1, layout.Running), []byte(`{"server":"other"}`), regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(ctx, paths.ItemNode(2, layout.Running), []byte(`{}`), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(ctx, paths.ItemNode(4, layout.Completed), []byte(`{}`), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	var holds assume.Holds
	m := &Marker{Center: rc, Paths: paths, Server: "me", Log: slog.New(slog.DiscardHandler), Holds: &holds,
		Cache: records.NewCache(), Fence: func(*regcenter.Session) (regcenter.Op, bool) { return nil, false }, GoneWait: 10 * time.Millisecond}
	sess := rc.Session()

	// The record of item 4 known at version 7: it is at 0, so changed.
	out := &outcomes{}
	run := Run{Sess: sess, Fire: time.UnixMilli(1_000), Kind: "fire", Items: []int{0, 1, 2, 3, 4}, Records: map[int]records.Record{4: {Version: 7}}}
	marked, err := m.Mark(ctx, run, out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(marked, []int{0, 2, 3, 4}) || !slices.Equal(out.busy, []int{1}) || !slices.Equal(out.rechecked, []int{2}) ||
		!slices.Equal(out.changed, []int{4}) || out.unmarked != nil {
		t.Fatalf("marked %v, outcomes %+v; want [0 2 3 4], busy [1], rechecked [2], changed [4]", marked, out)
	}
	if _, ok := run.Records[4]; ok {
		t.Fatal("a changed record stayed among the proved ones")
	}
	for _, it := range marked {
		ok, st, err := rc.Exists(ctx, paths.ItemNode(it, layout.Running))
		if err != nil || !ok || st.EphemeralOwner != sess.ID() {
			t.Fatalf("item %d: mark %+v, %v; want this session's", it, st, err)
		}
	}
	if !holds.HoldsAll(sess, marked) || holds.HoldsAll(sess, []int{1}) {
		t.Fatal("the marks made are not held, or a busy item is")
	}

	// Held items make no mark; a failed proof marks nothing.
	moved := []regcenter.Op{regcenter.CheckOp{Path: paths.ShardingEpoch(), Version: 99}}
	if err := rc.EnsurePath(ctx, paths.ShardingEpoch()); err != nil {
		t.Fatal(err)
	}
	left, err := m.Mark(ctx, Run{Sess: sess, Fire: time.UnixMilli(2_000), Kind: "fire", Items: []int{5, 6}, Checks: moved}, &outcomes{})
	if !errors.Is(err, assume.ErrMoved) || !slices.Equal(left, []int{5, 6}) {
		t.Fatalf("a failed proof: %v, %v; want assume.ErrMoved and the items back", left, err)
	}
	if ok, _, _ := rc.Exists(ctx, paths.ItemNode(5, layout.Running)); ok {
		t.Fatal("a failed proof left a mark")
	}
}

// countingCenter counts a Center's transactions and existence reads.
type countingCenter struct {
	regcenter.Center
	multis, exists atomic.Int64
}

func (c *countingCenter) Multi(ctx context.Context, ops ...regcenter.Op) error {
	c.multis.Add(1)
	return c.Center.Multi(ctx, ops...)
}

func (c *countingCenter) Exists(ctx context.Context, path string) (bool, regcenter.Stat, error) {
	c.exists.Add(1)
	return c.Center.Exists(ctx, path)
}

// TestMarkRemovesThisSessionsStaleMarksAtOnce: 300 items whose marks this
// very session left behind (a release that failed), none held, one item
// marked by another session. The marking removes the 299 stale marks in
// one fenced transaction after reads in parallel, rechecks them, hands
// the other session's item over as busy and marks the rest: four
// transactions, where one failed transaction and one delete per stale mark
// took 600 and outlasted a fire's deadline under load.
func TestMarkRemovesThisSessionsStaleMarksAtOnce(t *testing.T) {
	zc := zktest.Start(t)
	rc, other := roomtest.Open(t, zc.Servers(), "marks"), roomtest.Open(t, zc.Servers(), "marks")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	paths := layout.Job("stale")
	const n, foreign = 300, 7
	var ops []regcenter.Op
	for it := range n {
		ops = append(ops, regcenter.CreateOp{Path: paths.Item(it)})
	}
	if err := rc.EnsurePath(ctx, paths.Execution()); err != nil {
		t.Fatal(err)
	}
	if err := rc.Multi(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	ops = ops[:0]
	for it := range n {
		if it != foreign {
			ops = append(ops, regcenter.CreateOp{Path: paths.ItemNode(it, layout.Running), Data: []byte(`{}`), Mode: regcenter.Ephemeral})
		}
	}
	if err := rc.Multi(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(ctx, paths.ItemNode(foreign, layout.Running), []byte(`{}`), regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	if err := rc.EnsurePath(ctx, "/fence"); err != nil {
		t.Fatal(err)
	}
	cc := &countingCenter{Center: rc}
	var holds assume.Holds
	m := &Marker{Center: cc, Paths: paths, Server: "me", Log: slog.New(slog.DiscardHandler), Holds: &holds, Cache: records.NewCache(),
		Fence: func(*regcenter.Session) (regcenter.Op, bool) {
			return regcenter.CheckOp{Path: "/fence", Version: 0}, true
		},
		GoneWait: 10 * time.Millisecond}
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	out := &outcomes{}
	marked, err := m.Mark(ctx, Run{Sess: rc.Session(), Fire: time.UnixMilli(1_000), Kind: "fire", Items: items}, out)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(slices.Clone(items), func(it int) bool { return it == foreign })
	slices.Sort(marked)
	slices.Sort(out.rechecked)
	if !slices.Equal(marked, want) || !slices.Equal(out.rechecked, want) || !slices.Equal(out.busy, []int{foreign}) {
		t.Fatalf("marked %d items, rechecked %d, busy %v; want %d, %d, [%d]", len(marked), len(out.rechecked), out.busy, len(want), len(want), foreign)
	}
	if got := cc.multis.Load(); got > 4 {
		t.Errorf("%d transactions, want at most 4", got)
	}
	t.Logf("%d transactions, %d existence reads", cc.multis.Load(), cc.exists.Load())
	for _, it := range marked {
		ok, st, err := rc.Exists(ctx, paths.ItemNode(it, layout.Running))
		if err != nil || !ok || st.EphemeralOwner != rc.Session().ID() {
			t.Fatalf("item %d: mark %+v, %v; want this session's", it, st, err)
		}
	}
}

// TestDeleteHeldAndNotHeld: held marks are deleted in fenced transactions,
// a mark already gone is no error, a failed fence deletes nothing and
// names the items; Lost finds, in the marks as read (RunningPaths), one
// removed by hand and one replaced by another session's.
func TestDeleteHeldAndNotHeld(t *testing.T) {
	zc := zktest.Start(t)
	rc, other := roomtest.Open(t, zc.Servers(), "marks"), roomtest.Open(t, zc.Servers(), "marks")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	paths := layout.Job("held")
	for it := range 5 {
		if err := rc.EnsurePath(ctx, paths.Item(it)); err != nil {
			t.Fatal(err)
		}
		if it == 3 {
			continue // never marked: its delete drops out
		}
		if _, err := rc.Create(ctx, paths.ItemNode(it, layout.Running), []byte(`{}`), regcenter.Ephemeral); err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.EnsurePath(ctx, "/fence"); err != nil {
		t.Fatal(err)
	}
	sess := rc.Session()

	// Item 1 removed by hand, item 2 replaced by another session's mark.
	if err := rc.Delete(ctx, paths.ItemNode(1, layout.Running), -1); err != nil {
		t.Fatal(err)
	}
	if err := rc.Delete(ctx, paths.ItemNode(2, layout.Running), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(ctx, paths.ItemNode(2, layout.Running), []byte(`{}`), regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	held := []int{4, 2, 1, 0}
	nodes, err := rc.GetMany(ctx, RunningPaths(paths, held)...)
	if err != nil {
		t.Fatal(err)
	}
	if lost := Lost(sess, held, nodes); !slices.Equal(lost, []int{1, 2}) {
		t.Fatalf("Lost = %v; want [1 2]", lost)
	}

	// A fence that fails: nothing is deleted, the chunk is named.
	failed, err := DeleteHeld(ctx, rc, paths, regcenter.CheckOp{Path: "/fence", Version: 5}, []int{4, 0, 3})
	if err == nil || !slices.Equal(failed, []int{0, 3, 4}) {
		t.Fatalf("DeleteHeld under a failed fence = %v, %v", failed, err)
	}
	if ok, _, _ := rc.Exists(ctx, paths.ItemNode(0, layout.Running)); !ok {
		t.Fatal("a failed fence deleted a mark")
	}
	failed, err = DeleteHeld(ctx, rc, paths, regcenter.CheckOp{Path: "/fence", Version: 0}, []int{4, 0, 3})
	if err != nil || failed != nil {
		t.Fatalf("DeleteHeld = %v, %v", failed, err)
	}
	for _, it := range []int{0, 4} {
		if ok, _, _ := rc.Exists(ctx, paths.ItemNode(it, layout.Running)); ok {
			t.Fatalf("item %d's mark is still there", it)
		}
	}
	if ok, _, _ := rc.Exists(ctx, paths.ItemNode(2, layout.Running)); !ok {
		t.Fatal("another session's mark was deleted")
	}
}
