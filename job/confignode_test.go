package job

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// warnings keeps the messages of the records at Warn and above.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	w.msgs = append(w.msgs, r.Message)
	w.mu.Unlock()
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func (w *warnings) count(fragment string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.msgs {
		if strings.Contains(m, fragment) {
			n++
		}
	}
	return n
}

// TestRestoreConfigWarnsOnlyWhenTheNodeWasLost: re-registering a job
// that was never registered here (its tree not made yet) writes the
// config node without a warning; once the job was registered, a config
// node gone is the registry's loss, restored and reported.
func TestRestoreConfigWarnsOnlyWhenTheNodeWasLost(t *testing.T) {
	const missing = "config node was missing at re-registration"
	zc := zktest.Start(t)
	rc := connectOne(t, regcenter.Config{Servers: zc.Servers(), Namespace: "restore"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := &warnings{}
	s, err := NewScheduler(rc, WithServerID("one"), WithLogger(slog.New(w)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Name: "restored", Cron: "0 0 0 1 1 ?", ShardingTotalCount: 1}
	if err := s.Add(ctx, cfg, SimpleFunc(func(context.Context, ShardingContext) error { return nil })); err != nil {
		t.Fatal(err)
	}
	r := s.runner(cfg.Name)
	if err := r.restoreConfig(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := rc.Exists(ctx, r.paths.Config()); err != nil || !ok {
		t.Fatalf("config node after a first registration's restore: %t, %v", ok, err)
	}
	if n := w.count(missing); n != 0 {
		t.Fatalf("a job never registered here: %q logged %d times", missing, n)
	}
	// Present: nothing to do, nothing said.
	r.book.Registered(rc.Session())
	if err := r.restoreConfig(ctx); err != nil {
		t.Fatal(err)
	}
	if n := w.count(missing); n != 0 {
		t.Fatalf("config node present: %q logged %d times", missing, n)
	}
	// Registered here, and the registry lost the node: restored, reported.
	if err := rc.Delete(ctx, r.paths.Config(), -1); err != nil {
		t.Fatal(err)
	}
	if err := r.restoreConfig(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := rc.Exists(ctx, r.paths.Config()); err != nil || !ok {
		t.Fatalf("config node after its loss: %t, %v", ok, err)
	}
	if n := w.count(missing); n != 1 {
		t.Fatalf("config node lost: %q logged %d times, want once", missing, n)
	}
}
