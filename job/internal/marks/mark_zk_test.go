package marks

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
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

func open(t *testing.T, servers []string) *zookeeper.Center {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: servers, Namespace: "marks"}, regcenter.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}

// TestMarkOnARealRegistry: a first fire makes the item nodes; another
// session's mark makes its item busy (handed back, not marked); a
// persistent mark, which no instance writes, is removed and its item
// rechecked; a record changed since known is reported; a failed check of
// the assignment ends the marking with assume.ErrMoved and marks nothing.
func TestMarkOnARealRegistry(t *testing.T) {
	zc := zktest.Start(t)
	rc, other := open(t, zc.Servers()), open(t, zc.Servers())
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
