package reshard

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// TestOweEarliestOnARealRegistry: the first debt makes the node, a later
// one leaves it, an earlier one replaces it, and garbage is written over.
func TestOweEarliestOnARealRegistry(t *testing.T) {
	zc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: "owe"}, regcenter.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	paths := layout.Job("j")
	if err := rc.EnsurePath(ctx, paths.Item(0)); err != nil {
		t.Fatal(err)
	}
	report := func(string, regcenter.Stat, []byte, string, ...any) { t.Error("garbage read") }
	at := func(ms int64) time.Time { return time.UnixMilli(1_800_000_000_000 + ms) }
	for _, step := range []struct {
		owe, want time.Time
	}{
		{at(100), at(100)}, // no node: made
		{at(200), at(100)}, // later: the earlier stands
		{at(50), at(50)},   // earlier: written over
		{at(50), at(50)},   // the same: left
	} {
		if err := OweEarliest(ctx, rc, paths, 0, step.owe); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadDebt(ctx, rc, paths, 0, report); err != nil || !got.Equal(step.want) {
			t.Fatalf("owed %v: debt %v, %v; want %v", step.owe, got, err, step.want)
		}
	}
	if _, err := rc.Set(ctx, paths.ItemNode(0, layout.Misfire), []byte("{garbage"), -1); err != nil {
		t.Fatal(err)
	}
	if err := OweEarliest(ctx, rc, paths, 0, at(300)); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadDebt(ctx, rc, paths, 0, report); err != nil || !got.Equal(at(300)) {
		t.Fatalf("over garbage: %v, %v", got, err)
	}
}
