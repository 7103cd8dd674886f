package registration

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// TestArmOnARealRegistry: the flags' watch, armed on a server whose flags
// ask for nothing, notes the pause flag as armed and kicks nothing; one
// that asks for work (trigger, shutdown, backfill) or has lost its status
// kicks a read at once; an event of the watch kicks too. The disabled
// items' watch reports the node to read when it exists, nothing when it
// does not, and is armed once.
func TestArmOnARealRegistry(t *testing.T) {
	zc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: "arm"}, regcenter.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	paths := layout.Job("j")
	server := func(name string, flags ...string) string {
		t.Helper()
		for _, f := range flags {
			if err := rc.EnsurePath(ctx, paths.Flag(name, f)); err != nil {
				t.Fatal(err)
			}
		}
		return paths.Server(name)
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal(what)
			}
		}
	}
	var closers []func()
	defer func() {
		for _, c := range closers {
			if c != nil {
				c()
			}
		}
	}()

	for _, c := range []struct {
		name           string
		flags          []string
		paused, settle bool
	}{
		{"paused", []string{layout.Status, layout.Paused}, true, true},
		{"ready", []string{layout.Status}, false, true},
		{"trigger", []string{layout.Status, layout.Trigger}, false, false},
		{"shutdown", []string{layout.Status, layout.Paused, layout.Shutdown}, false, false},
		{"backfill", []string{layout.Status, layout.BackfillFlag}, false, false},
		{"nostatus", []string{layout.Paused}, false, false},
	} {
		var w Watches
		var kicks atomic.Int32
		paused, settled := w.ArmFlags(ctx, rc, server(c.name, c.flags...), func() { kicks.Add(1) }, log)
		closers = append(closers, w.Close()...)
		if paused != c.paused || settled != c.settle {
			t.Fatalf("%s: paused %v settled %v; want %v %v", c.name, paused, settled, c.paused, c.settle)
		}
		if want := int32(map[bool]int{true: 0, false: 1}[c.settle]); kicks.Load() != want {
			t.Fatalf("%s: %d kicks once armed; want %d", c.name, kicks.Load(), want)
		}
	}

	var w Watches
	var kicks atomic.Int32
	if _, settled := w.ArmFlags(ctx, rc, server("s1", layout.Status), func() { kicks.Add(1) }, log); !settled || kicks.Load() != 0 || !w.Armed(WatchFlags) {
		t.Fatalf("s1: settled %v, %d kicks, armed %v; want settled, none, armed", settled, kicks.Load(), w.Armed(WatchFlags))
	}
	server("s1", layout.Trigger)
	eventually("a trigger set after arming kicks no read", func() bool { return kicks.Load() > 0 })

	var items atomic.Int32
	kickItems := func() { items.Add(1) }
	if w.ArmItems(ctx, rc, paths.DisabledItems(), kickItems, log) || !w.Armed(WatchItems) {
		t.Fatal("the disabled items' watch on no node: read, or not kept")
	}
	if err := rc.EnsurePath(ctx, paths.DisabledItems()); err != nil {
		t.Fatal(err)
	}
	eventually("the disabled items' node made kicks no read", func() bool { return items.Load() > 0 })
	if w.ArmItems(ctx, rc, paths.DisabledItems(), kickItems, log) {
		t.Fatal("the disabled items' watch armed twice")
	}
	closers = append(closers, w.Close()...)

	var w2 Watches
	if !w2.ArmItems(ctx, rc, paths.DisabledItems(), kickItems, log) {
		t.Fatal("the disabled items' node exists and is not to be read")
	}
	closers = append(closers, w2.Close()...)
}
