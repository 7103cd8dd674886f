package flags

import (
	"context"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// TestReadingTheFlagsOnARealRegistry: the flags read as the server's
// children say; a trigger is taken once; a deleted status is restored only
// while registered; the disabled items are replaced whole, and garbage
// keeps the previous set.
func TestReadingTheFlagsOnARealRegistry(t *testing.T) {
	zc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: "flags"}, regcenter.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	paths := layout.Job("j")
	sess := rc.Session()
	f := New(rc, paths, "me", slog.New(slog.DiscardHandler), 10*time.Second)

	if _, ok := f.Read(ctx, sess); ok {
		t.Fatal("read the flags of a server with no node")
	}
	for _, kid := range []string{layout.Paused, layout.Trigger} {
		if err := rc.EnsurePath(ctx, paths.Flag("me", kid)); err != nil {
			t.Fatal(err)
		}
	}
	seen, ok := f.Read(ctx, sess)
	if want := (Seen{Paused: true, Trigger: true}); !ok || seen != want {
		t.Fatalf("read %+v (%v), want %+v", seen, ok, want)
	}
	if !f.TakeTrigger(ctx) || !f.TakeTrigger(ctx) {
		t.Error("a trigger, or one taken already, was not this instance's")
	}
	if seen, _ := f.Read(ctx, sess); seen.Trigger {
		t.Error("the trigger flag is still set once taken")
	}

	status := paths.Flag("me", layout.Status)
	f.RestoreStatus(ctx, sess, false)
	if ok, _, _ := rc.Exists(ctx, status); ok {
		t.Error("restored the status of an instance not registered")
	}
	f.RestoreStatus(ctx, sess, true)
	if ok, st, _ := rc.Exists(ctx, status); !ok || st.EphemeralOwner == 0 {
		t.Errorf("status not restored as an ephemeral node: %v, %+v", ok, st)
	}

	f.ReadDisabledItems(sess)
	if got := f.DisabledItems(); got == nil || len(got) != 0 {
		t.Errorf("no node: %v, want an empty set", got)
	}
	if _, err := rc.Create(ctx, paths.DisabledItems(), []byte("1,3"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	f.ReadDisabledItems(sess)
	want := map[int]bool{1: true, 3: true}
	if got := f.DisabledItems(); !maps.Equal(got, want) {
		t.Errorf("disabled %v, want %v", got, want)
	}
	if _, err := rc.Set(ctx, paths.DisabledItems(), []byte("one"), -1); err != nil {
		t.Fatal(err)
	}
	f.ReadDisabledItems(sess)
	if got := f.DisabledItems(); !maps.Equal(got, want) {
		t.Errorf("garbage: disabled %v, want the previous %v", got, want)
	}
}

// TestPauseOnARealRegistry: Pause sets a persistent paused flag, its
// parents made as needed, which Read then sees; a second Pause is not an
// error.
func TestPauseOnARealRegistry(t *testing.T) {
	ctx, rc := roomtest.ZooKeeper(t, "pause")
	paths := layout.Job("j")
	f := New(rc, paths, "me", slog.New(slog.DiscardHandler), 10*time.Second)
	if err := f.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, st, err := rc.Exists(ctx, paths.Flag("me", layout.Paused)); err != nil || !ok || st.EphemeralOwner != 0 {
		t.Fatalf("paused flag: %v, %+v, %v; want a persistent node", ok, st, err)
	}
	if seen, ok := f.Read(ctx, rc.Session()); !ok || !seen.Paused {
		t.Errorf("read %+v (%v) after Pause, want paused", seen, ok)
	}
	if err := f.Pause(ctx); err != nil {
		t.Errorf("pausing a paused server: %v", err)
	}
}
