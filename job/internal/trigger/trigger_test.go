package trigger

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// A job whose fires send no request is dispatched at its fire's time, one
// that sends requests a lead ahead; a quick job that stops being quick
// gets its lead back for the fire it waits for, and loses it when it is
// quick again (relead).
func TestTriggerLeadsOnlyFiresThatSendRequests(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 100e6, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(to time.Time) { mu.Lock(); now = to; mu.Unlock() }
	type dispatch struct {
		job string
		at  time.Time
	}
	fired := make(chan dispatch, 16)
	trig := New(wallClock{now: clock}, 400*time.Millisecond)
	fireOf := func(job string) func(time.Time) { return func(at time.Time) { fired <- dispatch{job, at} } }
	every, err := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse("* * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	var quick atomic.Bool
	quick.Store(true)
	trig.Set("quick", every, fireOf("quick"), quick.Load)
	trig.Set("slow", every, fireOf("slow"), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); trig.Run(ctx) }()
	defer func() { cancel(); <-done }()

	next := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	due := func(job string) time.Time {
		trig.mu.Lock()
		defer trig.mu.Unlock()
		return trig.byJob[job].due
	}
	if got, want := due("slow"), next.Add(-400*time.Millisecond); !got.Equal(want) {
		t.Fatalf("slow job dispatched at %v, want %v (its fire less the lead)", got, want)
	}
	if got := due("quick"); !got.Equal(next) {
		t.Fatalf("quick job dispatched at %v, want its fire's time %v", got, next)
	}
	receive := func(want string) {
		t.Helper()
		select {
		case d := <-fired:
			if d.job != want || !d.at.Equal(next) {
				t.Fatalf("dispatched %s for %v, want %s for %v", d.job, d.at, want, next)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s not dispatched", want)
		}
	}

	advance(next.Add(-300 * time.Millisecond)) // within the lead
	trig.poke()
	receive("slow")
	trig.Relead("quick") // still quick: nothing moves
	if got := due("quick"); !got.Equal(next) {
		t.Fatalf("relead of a quick job moved its dispatch to %v", got)
	}
	quick.Store(false)
	trig.Relead("quick") // now within its lead: dispatched at once
	receive("quick")
	if got, want := due("quick"), next.Add(600*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after losing its proof the quick job's next fire is dispatched at %v, want %v", got, want)
	}
	quick.Store(true)
	if got, want := due("quick"), next.Add(600*time.Millisecond); !got.Equal(want) {
		t.Fatalf("the trigger asked the job again before a relead: dispatch moved to %v", got)
	}
	trig.Relead("quick") // quick again: its next fire is dispatched at its time
	if got, want := due("quick"), next.Add(time.Second); !got.Equal(want) {
		t.Fatalf("after getting its proof back the job's next fire is dispatched at %v, want %v", got, want)
	}
	select {
	case d := <-fired:
		t.Fatalf("unexpected dispatch %+v", d)
	default:
	}
}

// noFire is a schedule with no fire left (a calendar's limit or end
// passed).
type noFire struct{}

func (noFire) Next(time.Time) time.Time { return time.Time{} }

// A job set with no fire left is not in the heap, and unscheduling or
// rescheduling it leaves the other jobs' fires alone: it once kept index
// 0, so removing it took the first job's entry out of the heap (or
// panicked on an empty one) and that job silently stopped firing.
func TestTriggerJobWithNoFireLeftLeavesOthersScheduled(t *testing.T) {
	tr := New(wallClock{now: time.Now}, 0)
	every, err := cron.ParseStandard("@every 1h")
	if err != nil {
		t.Fatal(err)
	}
	tr.Set("a", every, func(time.Time) {}, nil)
	tr.Set("ended", noFire{}, func(time.Time) {}, nil)
	tr.Relead("ended")
	tr.Set("ended", noFire{}, func(time.Time) {}, nil)
	tr.Remove("ended")
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.h) != 1 || tr.h[0].job != "a" || tr.byJob["a"].index != 0 {
		t.Fatalf("heap %d entries, want job a alone at index 0", len(tr.h))
	}
}

// wallClock is a Clock reading now, with real timers set for the
// difference between a time and now's reading.
type wallClock struct{ now func() time.Time }

func (c wallClock) Now() time.Time { return c.now() }

func (c wallClock) AfterFunc(at time.Time, f func()) Timer {
	return wallTimer{t: time.AfterFunc(at.Sub(c.now()), f), now: c.now}
}

type wallTimer struct {
	t   *time.Timer
	now func() time.Time
}

func (t wallTimer) Stop() bool { return t.t.Stop() }

func (t wallTimer) Reset(at time.Time) bool { return t.t.Reset(at.Sub(t.now())) }
