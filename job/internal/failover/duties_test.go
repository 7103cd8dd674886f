package failover

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// everySecond fires on every whole second.
type everySecond struct{}

func (everySecond) Next(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestOwedStartsAtTheFirstFireNotCompleted(t *testing.T) {
	latest := t0.Add(10 * time.Second)
	tests := []struct {
		name      string
		done      time.Time
		wantOwed  bool
		wantSince time.Time
	}{
		{name: "no record: the latest fire", wantOwed: true, wantSince: latest},
		{name: "completed the latest fire", done: latest},
		{name: "completed a later fire", done: latest.Add(time.Second)},
		{name: "completed an earlier fire: the one after it", done: t0, wantOwed: true, wantSince: t0.Add(time.Second)},
		{name: "completed the fire before the latest", done: latest.Add(-time.Second), wantOwed: true, wantSince: latest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, owed := Owed(everySecond{}, 3, "gone", tt.done, latest)
			if owed != tt.wantOwed {
				t.Fatalf("owed %v, want %v", owed, tt.wantOwed)
			}
			if !owed {
				return
			}
			want := failover.Entry{Item: 3, Fire: tt.wantSince.UnixMilli(), From: "gone", MayHaveRun: latest.UnixMilli()}
			if e != want {
				t.Errorf("entry %+v, want %+v", e, want)
			}
		})
	}
}

func TestLatestFire(t *testing.T) {
	now := t0.Add(1500 * time.Millisecond)
	tests := []struct {
		name  string
		sched interface{ Next(time.Time) time.Time }
		want  time.Time
	}{
		{name: "the latest fire at or before now", sched: everySecond{}, want: t0.Add(time.Second)},
		{name: "no schedule: now", want: now},
		{name: "no fire in the past year: now", sched: never{}, want: now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LatestFire(tt.sched, now); !got.Equal(tt.want) {
				t.Errorf("LatestFire = %v, want %v", got, tt.want)
			}
		})
	}
}

// never has no fire.
type never struct{}

func (never) Next(time.Time) time.Time { return time.Time{} }

// A departed server's items are queued from the first fire each has not
// completed, and its assignment cleared in the same transaction: queued
// again, the departure queues nothing more. A live server, and one
// without an assignment, are left alone.
func TestDeparturesQueueWhatTheDepartedOwes(t *testing.T) {
	ctx, rc := center(t)
	create(ctx, t, rc, fenceNode, nil, regcenter.Persistent)
	create(ctx, t, rc, paths.Flag("gone", layout.Sharding), []byte("0-3,9"), regcenter.Persistent)
	create(ctx, t, rc, paths.Flag("live", layout.Sharding), []byte("4"), regcenter.Persistent)
	now := t0.Add(10*time.Second + 200*time.Millisecond)
	latest := t0.Add(10 * time.Second)
	done := map[int]time.Time{1: latest, 2: t0.Add(5 * time.Second)}
	d := &Departures{
		RC: rc, Paths: paths, Job: job, Log: slog.New(slog.DiscardHandler),
		Fence:     func() (regcenter.Op, error) { return regcenter.CheckOp{Path: fenceNode, Version: 0}, nil },
		Completed: func(_ context.Context, item int) (time.Time, error) { return done[item], nil },
		Now:       func() time.Time { return now },
	}
	servers := map[string]map[string]bool{
		"gone": {layout.Sharding: true},
		"live": {layout.Sharding: true, layout.Status: true},
		"none": {},
	}
	if err := d.Queue(ctx, servers, 8, everySecond{}); err != nil {
		t.Fatal(err)
	}
	q := failover.NewQueue(rc, job)
	items, err := q.Items(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 2, 3}; !slices.Equal(items, want) { // 1 completed, 9 beyond the count
		t.Fatalf("queued %v, want %v", items, want)
	}
	fires := map[int]time.Time{}
	for _, it := range items {
		e, err := q.Claim(ctx, it, "me")
		if err != nil {
			t.Fatal(err)
		}
		fires[it] = time.UnixMilli(e.Fire)
		if e.From != "gone" || e.MayHaveRun != latest.UnixMilli() {
			t.Errorf("item %d: entry %+v, want from gone, may have run %v", it, e, latest)
		}
	}
	want := map[int]time.Time{0: latest, 2: t0.Add(6 * time.Second), 3: latest}
	if !maps.EqualFunc(fires, want, time.Time.Equal) {
		t.Errorf("fires %v, want %v", fires, want)
	}
	for sv, want := range map[string]string{"gone": "", "live": "4"} {
		if data, _, err := rc.Get(ctx, paths.Flag(sv, layout.Sharding)); err != nil || string(data) != want {
			t.Errorf("%s's assignment %q (%v), want %q", sv, data, err, want)
		}
	}
	if err := d.Queue(ctx, servers, 8, everySecond{}); err != nil {
		t.Fatalf("queueing again: %v", err)
	}
	if err := d.Queue(ctx, servers, 8, nil); !errors.Is(err, ErrNoSchedule) {
		t.Errorf("no schedule: %v, want %v", err, ErrNoSchedule)
	}
}

// A scan claims what it may run, by fire; it leaves an item running here
// (the queue dirty), one blocked, one beyond the count; it pays a garbage
// entry as the latest fire's; and an item another instance claimed is
// watched until that claim goes.
func TestClaimerClaimsWhatItMayRun(t *testing.T) {
	ctx, rc := center(t)
	q := failover.NewQueue(rc, job)
	entries := []failover.Entry{
		{Item: 0, Fire: 1000, From: "gone", MayHaveRun: 2000},
		{Item: 1, Fire: 2000, From: "gone", Attempts: 2},
		{Item: 2, Fire: 1000, From: "gone"}, // running here
		{Item: 3, Fire: 1000, From: "gone"}, // blocked
		{Item: 4, Fire: 1000, From: "gone"}, // claimed elsewhere
		{Item: 9, Fire: 1000, From: "gone"}, // beyond the count
	}
	if err := q.Enqueue(ctx, entries); err != nil {
		t.Fatal(err)
	}
	create(ctx, t, rc, paths.FailoverItem(5), []byte("{garbage"), regcenter.Persistent)
	if _, err := q.Claim(ctx, 4, "other"); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(1500 * time.Millisecond)
	var watched []string
	c := &Claimer{
		State: NewState(), RC: rc, Paths: paths, Job: job, Server: "me", Log: slog.New(slog.DiscardHandler),
		Watch: func(p string, _ func()) func() { watched = append(watched, p); return func() {} },
		Kick:  func() {},
		Now:   func() time.Time { return now },
	}
	c.State.Block(3)
	items, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Claim(ctx, items, 8, everySecond{}, func(it int) bool { return it == 2 })
	latest := t0.Add(time.Second).UnixMilli()
	wantByFire := map[int64][]int{1000: {0}, 2000: {1}, latest: {5}}
	if !maps.EqualFunc(got.ByFire, wantByFire, slices.Equal) || got.N != 3 {
		t.Errorf("claimed %v (%d), want %v (3)", got.ByFire, got.N, wantByFire)
	}
	if want := map[int]time.Time{0: time.UnixMilli(2000), 5: time.UnixMilli(latest)}; !maps.EqualFunc(got.MayHaveRun, want, time.Time.Equal) {
		t.Errorf("may have run %v, want %v", got.MayHaveRun, want)
	}
	if want := map[int]Attempts{1: {Fire: time.UnixMilli(2000), N: 2}}; !maps.EqualFunc(got.Attempts, want, func(a, b Attempts) bool { return a.N == b.N && a.Fire.Equal(b.Fire) }) {
		t.Errorf("attempts %v, want %v", got.Attempts, want)
	}
	if !c.State.Dirty() {
		t.Error("an item running here left the queue clean")
	}
	if want := []string{paths.ItemNode(4, layout.Failover)}; !slices.Equal(watched, want) {
		t.Errorf("watched %v, want %v", watched, want)
	}
	if v := c.State.ClaimVersion(0); v < 0 {
		t.Errorf("claim on 0 not noted: version %d", v)
	}
	// Item 1 began running here meanwhile: its claim goes back, its entry
	// stays.
	c.GiveBack(ctx, []int{0, 1}, []int{0})
	if c.State.ClaimVersion(1) != -1 || c.State.ClaimVersion(0) < 0 {
		t.Error("GiveBack dropped the wrong claims")
	}
	if ok, _, err := rc.Exists(ctx, paths.ItemNode(1, layout.Failover)); err != nil || ok {
		t.Errorf("claim on 1 still there (%v)", err)
	}
	if ok, _, err := rc.Exists(ctx, paths.FailoverItem(1)); err != nil || !ok {
		t.Errorf("entry of 1 gone (%v)", err)
	}
}
