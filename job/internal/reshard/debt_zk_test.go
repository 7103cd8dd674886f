package reshard

import (
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// TestReadDebtOnARealRegistry: no misfire node is no debt; a node gives
// its fire; garbage is reported and read as no debt. OweEarliest makes the
// node, leaves a debt earlier than its own and writes over a later one or
// garbage.
func TestReadDebtOnARealRegistry(t *testing.T) {
	ctx, rc := roomtest.ZooKeeper(t, "debt")
	paths := layout.Job("j")
	reports := 0
	report := func(string, regcenter.Stat, []byte, string, ...any) { reports++ }

	if at, err := ReadDebt(ctx, rc, paths, 0, report); err != nil || !at.IsZero() {
		t.Fatalf("no node: %v, %v; want no debt", at, err)
	}
	since := time.UnixMilli(1_800_000_000_000)
	for item, data := range map[int][]byte{1: stored.Misfire{Since: since.UnixMilli()}.Marshal(), 2: []byte("{garbage")} {
		if err := rc.EnsurePath(ctx, paths.Item(item)); err != nil {
			t.Fatal(err)
		}
		if _, err := rc.Create(ctx, paths.ItemNode(item, layout.Misfire), data, regcenter.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	if at, err := ReadDebt(ctx, rc, paths, 1, report); err != nil || !at.Equal(since) {
		t.Fatalf("a debt: %v, %v; want %v", at, err, since)
	}
	if at, err := ReadDebt(ctx, rc, paths, 2, report); err != nil || !at.IsZero() || reports != 1 {
		t.Fatalf("garbage: %v, %v, %d reports; want no debt, one report", at, err, reports)
	}

	if err := rc.EnsurePath(ctx, paths.Item(3)); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ owe, want time.Time }{
		{since.Add(100 * time.Millisecond), since.Add(100 * time.Millisecond)}, // no node: made
		{since.Add(200 * time.Millisecond), since.Add(100 * time.Millisecond)}, // later: the earlier stands
		{since.Add(50 * time.Millisecond), since.Add(50 * time.Millisecond)},   // earlier: written over
		{since.Add(50 * time.Millisecond), since.Add(50 * time.Millisecond)},   // the same: left
	} {
		if err := OweEarliest(ctx, rc, paths, 3, step.owe); err != nil {
			t.Fatal(err)
		}
		if at, err := ReadDebt(ctx, rc, paths, 3, report); err != nil || !at.Equal(step.want) {
			t.Fatalf("owed %v: debt %v, %v; want %v", step.owe, at, err, step.want)
		}
	}
	if err := OweEarliest(ctx, rc, paths, 2, since); err != nil {
		t.Fatal(err)
	}
	if at, err := ReadDebt(ctx, rc, paths, 2, report); err != nil || !at.Equal(since) || reports != 1 {
		t.Fatalf("owed over garbage: %v, %v, %d reports", at, err, reports)
	}
}
