package heldmarks

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
)

func sorted(items []int) []int { slices.Sort(items); return items }

// TestKeeperOnARealRegistry: the keeper releases the marks a keep does not
// keep, but not one whose item a run here has reserved; a release under a
// session that is not the fence's deletes nothing and forgets the marks; a
// completion keeps the marks of recorded runs still held and drops the
// others; the reconcile round forgets a mark removed by hand; a moved
// assignment releases what left it.
func TestKeeperOnARealRegistry(t *testing.T) {
	ctx, rc := roomtest.ZooKeeper(t, "held")
	paths := layout.Job("j")
	sess := rc.Session()
	log := slog.New(slog.DiscardHandler)
	fenced := true
	var held assume.Holds
	var cache assume.Cache
	b := book.New(book.NewLedger(), book.Options{Log: log, MisfiresOwed: new(atomic.Int64), Now: time.Now, OnIdle: func() {}})
	k := &Keeper{RC: rc, Paths: paths, ServerID: "s1", Held: &held, Assumed: &cache, Book: b, Records: records.NewCache(), Log: log,
		Fence: func(s *regcenter.Session) (regcenter.Op, bool) {
			return regcenter.CheckOp{Path: paths.Root(), Version: -1}, fenced && s == sess
		}}
	mark := func(items ...int) {
		t.Helper()
		for _, it := range items {
			if err := rc.EnsurePath(ctx, paths.Item(it)); err != nil {
				t.Fatal(err)
			}
			if _, err := rc.Create(ctx, paths.ItemNode(it, layout.Running), nil, regcenter.Ephemeral); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
				t.Fatal(err)
			}
		}
		held.Add(sess, items)
	}
	marked := func() []int {
		t.Helper()
		var out []int
		for it := range 6 {
			if ok, _, err := rc.Exists(ctx, paths.ItemNode(it, layout.Running)); err != nil {
				t.Fatal(err)
			} else if ok {
				out = append(out, it)
			}
		}
		return out
	}

	mark(0, 1, 2, 3)
	job := book.Job{Items: 6, Schedule: cron.Every(time.Second)}
	if got := b.Reserve(job, []int{3}, time.Now(), time.Now(), book.Fire, nil); !slices.Equal(got, []int{3}) {
		t.Fatalf("reserving item 3: %v", got)
	}
	k.Release(ctx, sess, func(it int) bool { return it == 1 })
	if got := marked(); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("after a release keeping 1 (3 reserved): marks %v; want [1 3]", got)
	}
	if got := sorted(held.Items(sess)); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("after a release keeping 1 (3 reserved): held %v; want [1 3]", got)
	}

	fenced = false
	k.Release(ctx, sess, func(it int) bool { return it == 3 })
	if got := marked(); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("a release outside the fence deleted marks: %v; want [1 3]", got)
	}
	if got := sorted(held.Items(sess)); !slices.Equal(got, []int{3}) {
		t.Fatalf("a release outside the fence: held %v; want [3] (1 forgotten)", got)
	}
	fenced = true

	mark(1, 4)
	noWatch := func() func() { return func() {} }
	cache.Assume(assume.Assignment{Sess: sess, Items: []int{1, 3, 4}, Set: true}, cache.WatchGen(), false, noWatch, noWatch)
	keep := k.KeepAfter(sess, []completion.Result{
		{Item: 1, Kind: book.Fire},
		{Item: 3, Kind: book.Trigger},                        // a trigger writes no record: its mark goes
		{Item: 4, Kind: book.Fire, Halted: context.Canceled}, // cut short: its mark goes
		{Item: 5, Kind: book.Fire},                           // never held
	})
	if !keep[1] || keep[3] || keep[4] || keep[5] {
		t.Fatalf("KeepAfter: %v; want only item 1 kept", keep)
	}
	if got := sorted(held.Items(sess)); !slices.Equal(got, []int{1}) {
		t.Fatalf("after KeepAfter: held %v; want [1]", got)
	}

	mark(2)
	if err := rc.Delete(ctx, paths.ItemNode(2, layout.Running), -1); err != nil {
		t.Fatal(err)
	}
	ps, check := k.Verify(sess)
	nodes, err := rc.GetMany(ctx, ps...)
	if err != nil {
		t.Fatal(err)
	}
	check(nodes)
	if got := sorted(held.Items(sess)); !slices.Equal(got, []int{1}) {
		t.Fatalf("after a mark removed by hand and the round: held %v; want [1]", got)
	}

	mark(0, 1, 2)
	if err := rc.EnsurePath(ctx, paths.Flag("s1", layout.Sharding)); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Set(ctx, paths.Flag("s1", layout.Sharding), []byte("1,2"), -1); err != nil {
		t.Fatal(err)
	}
	k.ReleaseMoved(ctx, sess)
	if got := sorted(held.Items(sess)); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("after a move to 1,2: held %v; want [1 2]", got)
	}
	if got := marked(); slices.Contains(got, 0) {
		t.Fatalf("after a move to 1,2: item 0's mark is still there: %v", got)
	}
}
