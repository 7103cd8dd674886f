package job_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// TestGainedItemsRunTheFireTheyPassedIdle: the instance holding a job's
// only item dies; the leader (alive) reshards at the next fire, and the
// item goes to an instance that has let that very fire pass as idle. It
// runs the fire at once, a make-up run standing for it, instead of a
// whole period later; and the fire runs once.
func TestGainedItemsRunTheFireTheyPassedIdle(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	const period = 4 * time.Second
	cfg := job.Config{Name: "cu", Cron: "*/4 * * * * *", ShardingTotalCount: 1}
	startInstance(t, ns, "s1", cfg, rec) // the leader throughout
	s2 := startInstance(t, ns, "s2", cfg, rec)
	ran := func(server string, after time.Time) bool {
		for _, r := range rec.snapshot() {
			if r.server == server && r.fire.After(after) {
				return true
			}
		}
		return false
	}
	waitUntil(t, 20*time.Second, func() bool { return ran("s1", time.Time{}) })
	// Move the item to s2 by disabling s1 for the job: s1 stays the
	// leader and takes no items, so the item's next owner is s3.
	obs := observer(t, ns)
	if _, err := obs.Create(tctx(t), "/cu/servers/s1/disabled", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool { return ran("s2", time.Time{}) })
	joined := time.Now()
	startInstance(t, ns, "s3", cfg, rec)
	// Crash s2 right after one of its fires, once s3 has let two fires
	// pass as an idle instance: the next fire is the first the item
	// misses.
	var last time.Time
	waitUntil(t, 30*time.Second, func() bool {
		recs := rec.snapshot()
		r := recs[len(recs)-1]
		last = r.fire
		return r.server == "s2" && r.fire.After(joined.Add(period)) && time.Since(r.fire) < period/2
	})
	s2.crash(t)
	next := last.Add(period)
	var got []record
	waitUntil(t, 30*time.Second, func() bool {
		got = nil
		for _, r := range rec.snapshot() {
			if r.server != "s2" && !r.through.Before(next) && !r.fire.After(next) {
				got = append(got, r)
			}
		}
		return len(got) > 0
	})
	if len(got) != 1 {
		t.Fatalf("the fire at %s ran %d times: %+v", next.Format("15:04:05"), len(got), got)
	}
	r := got[0]
	t.Logf("the fire at %s ran on %s as a %s run (fire %s through %s), begun %v after it", next.Format("15:04:05"),
		r.server, r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.begin.Sub(next))
	if !r.begin.Before(next.Add(period)) {
		t.Errorf("the fire at %s ran only at %s, with the fire after it: the new owner let it pass", next.Format("15:04:05"), r.begin.Format("15:04:05.000"))
	}
}

// TestItemsGainedAfterAFireTookItsAssignmentRunThatFire: a reshard that
// commits just after an instance's fire took its assignment (here proved
// by a steady fire's own means, not let pass idle) gives it an item whose
// owner then waited for that reshard and let the fire pass. The new owner
// runs that fire at once, and once — not a whole period later, and, for a
// new job's item with no record yet, not never (seen as fires lost when a
// fleet's Starts all return within a second). The leader a runs on a
// clock two seconds behind, so its fire T comes after b's; the test
// disables a and flags the reshard in between, and a, the leader still,
// reshards at its fire T and gives b its item.
func TestItemsGainedAfterAFireTookItsAssignmentRunThatFire(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	const period, behind = 4 * time.Second, 2 * time.Second
	cfg := job.Config{Name: "late", Cron: "*/4 * * * * *", ShardingTotalCount: 2}
	startInstance(t, ns, "a", cfg, rec, job.WithClockForTest(func() time.Time { return time.Now().Add(-behind) }))
	startInstance(t, ns, "b", cfg, rec)
	ranOn := func(server string, item int, since time.Time) (record, bool) {
		for _, r := range rec.snapshot() {
			if r.server == server && r.item == item && r.begin.After(since) {
				return r, true
			}
		}
		return record{}, false
	}
	// Steady: a runs item 0, b item 1.
	joined := time.Now()
	waitUntil(t, 30*time.Second, func() bool {
		_, a0 := ranOn("a", 0, joined)
		_, b1 := ranOn("b", 1, joined)
		return a0 && b1
	})
	// b's next fire T has taken its assignment once its run of item 1
	// is recorded; a's fire T is two seconds away.
	var fireT time.Time
	since := time.Now()
	waitUntil(t, 20*time.Second, func() bool {
		r, ok := ranOn("b", 1, since)
		fireT = r.fire
		return ok
	})
	obs := observer(t, ns)
	ctx := tctx(t)
	if _, err := obs.Create(ctx, "/late/servers/a/disabled", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	paths := layout.Job("late")
	if err := obs.Multi(ctx, paths.FlagReshardOps()...); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		t.Fatal(err)
	}
	if flagged := time.Now(); !flagged.Before(fireT.Add(behind - time.Second)) {
		t.Fatalf("the reshard was flagged at %s, too close to a's fire %s (real %s) for the test to tell anything",
			flagged.Format("15:04:05.000"), fireT.Format("15:04:05"), fireT.Add(behind).Format("15:04:05"))
	}
	// Item 0's fire T runs once, on b, before the fire after it.
	var got []record
	waitUntil(t, 30*time.Second, func() bool {
		got = nil
		for _, r := range rec.snapshot() {
			if r.item == 0 && !r.through.Before(fireT) && !r.fire.After(fireT) {
				got = append(got, r)
			}
		}
		return len(got) > 0
	})
	if len(got) != 1 || got[0].server != "b" {
		t.Fatalf("item 0's fire at %s ran %d times: %+v", fireT.Format("15:04:05"), len(got), got)
	}
	r := got[0]
	t.Logf("item 0's fire at %s ran on b as a %s run (fire %s through %s), begun %v after it", fireT.Format("15:04:05"),
		r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.begin.Sub(fireT))
	if !r.begin.Before(fireT.Add(period)) {
		t.Errorf("item 0's fire at %s ran only at %s, with the fire after it: b let it pass", fireT.Format("15:04:05"), r.begin.Format("15:04:05.000"))
	}
}

// heldReshards wraps an instance's registry and fails every transaction
// that writes a sharding node (a reshard's) until release is closed, and
// notes the seconds in which the instance read its own sharding node
// meanwhile: a fire waited for the reshard in vain, read its assignment
// (none) and let the fire pass.
type heldReshards struct {
	regcenter.Center
	own     string // the instance's sharding node
	release chan struct{}
	mu      sync.Mutex
	passed  map[time.Time]bool // the seconds of the reads
}

var errHeldBack = errors.New("reshard held back by the test")

func (h *heldReshards) Multi(ctx context.Context, ops ...regcenter.Op) error {
	for _, op := range ops {
		if p := job.WrittenPath(op); strings.HasSuffix(p, "/"+layout.Sharding) && strings.Contains(p, "/servers/") {
			select {
			case <-h.release:
			default:
				return errHeldBack
			}
			break
		}
	}
	return h.Center.Multi(ctx, ops...)
}

func (h *heldReshards) Get(ctx context.Context, p string) ([]byte, regcenter.Stat, error) {
	select {
	case <-h.release:
	default:
		if p == h.own {
			h.mu.Lock()
			h.passed[time.Now().Truncate(time.Second)] = true
			h.mu.Unlock()
		}
	}
	return h.Center.Get(ctx, p)
}

// SessionTimeout forwards the wrapped registry's, which the scheduler reads.
func (h *heldReshards) SessionTimeout() time.Duration { return sessionTimeoutOf(h.Center) }

func (h *heldReshards) passes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.passed)
}

// TestANewJobsItemOwesEveryFireSinceTheJobBegan: a new job's first
// reshard does not commit for several fires (its transaction held back),
// and every fire meanwhile waits for it in vain and passes with the item
// in no assignment. Once the reshard commits, the item's owner runs every
// fire since the job's first, once — not only the latest nor the two
// before it (seen as a new job's first fires lost when a fleet's Starts
// all returned within a second beside a CPU hog: the leader's first
// reshard came seconds late, or left the items unplaced while every
// instance was starting, and an owner behind in its fire order read after
// a reshard that came two fires later).
func TestANewJobsItemOwesEveryFireSinceTheJobBegan(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := job.Config{Name: "young", Cron: "* * * * * *", ShardingTotalCount: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held := &heldReshards{own: layout.Job("young").Flag("a", layout.Sharding), release: make(chan struct{}), passed: map[time.Time]bool{}}
	rc, s := connectVia(t, ctx, ns, "a", func(rc regcenter.Center) regcenter.Center {
		held.Center = rc
		return held
	}, job.WithReshardTimeout(300*time.Millisecond))
	if err := s.Add(ctx, cfg, rec.job("a")); err != nil {
		t.Fatal(err)
	}
	running(t, ctx, "a", rc, s)
	started := time.Now()
	first := started.Truncate(time.Second).Add(time.Second) // the first fire after Start returned
	// Fires pass with no assignment in four seconds.
	waitUntil(t, 20*time.Second, func() bool { return held.passes() >= 4 })
	released := time.Now()
	close(held.release)
	var got []record
	waitUntil(t, 20*time.Second, func() bool {
		got = rec.snapshot()
		return len(got) > 0 && got[0].through.After(released)
	})
	r := got[0]
	t.Logf("first run: %s from %s through %s, begun %s; Start returned %s, the reshard released %s", r.kind,
		r.fire.Format("15:04:05.000"), r.through.Format("15:04:05.000"), r.begin.Format("15:04:05.000"),
		started.Format("15:04:05.000"), released.Format("15:04:05.000"))
	if r.fire.After(first) {
		t.Fatalf("the item's first run stands for the fires from %s: the fires from %s, the first after Start, were lost",
			r.fire.Format("15:04:05"), first.Format("15:04:05"))
	}
	for _, o := range got[1:] {
		if !o.fire.After(r.through) {
			t.Fatalf("a fire ran twice: %+v after %+v", o, r)
		}
	}
}

// TestANewJobEnabledLaterOwesNoFireOfItsDisabledTime: a job registered
// disabled and enabled seconds later — young, its item never run — starts
// with the first fire after it was enabled: its fires while disabled were
// nobody's to run, and no make-up run stands for them.
func TestANewJobEnabledLaterOwesNoFireOfItsDisabledTime(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := job.Config{Name: "later", Cron: "* * * * * *", ShardingTotalCount: 1, Disabled: true}
	events := make(chan job.Event, 256)
	startInstance(t, ns, "a", cfg, rec, eventsTo(events))
	// Fire times pass while the job is disabled.
	time.Sleep(2500 * time.Millisecond)
	if n := len(rec.snapshot()); n != 0 {
		t.Fatalf("%d runs of a disabled job", n)
	}
	enabled := cfg
	enabled.Disabled = false
	doc, err := enabled.Encode()
	if err != nil {
		t.Fatal(err)
	}
	setAt := time.Now()
	if _, err := observer(t, ns).Set(tctx(t), "/later/config", doc, -1); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, job.EventConfigChanged, 20*time.Second)
	waitUntil(t, 20*time.Second, func() bool { return len(rec.snapshot()) > 0 })
	r := rec.snapshot()[0]
	if r.fire.Before(setAt) {
		t.Fatalf("the first run, a %s run, stands for the fires from %s, before the job was enabled at %s",
			r.kind, r.fire.Format("15:04:05.000"), setAt.Format("15:04:05.000"))
	}
}
