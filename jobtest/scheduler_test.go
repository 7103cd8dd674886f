package jobtest_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtest"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter/embedded"
)

// run is what an execution saw: its fire's time and the clock's.
type run struct {
	fire, now time.Time
	kind      job.Kind
}

// scheduled is a started scheduler on a fake clock, with one job whose
// executions are sent to runs.
type scheduled struct {
	clock *jobtest.Clock
	sched *job.Scheduler
	runs  chan run
	ended chan time.Time  // the fires that have ended here (a fire listener)
	ctx   context.Context // the test's deadline: every wait is bounded
}

// startOn starts a scheduler on a registry embedded in the test, firing
// by a fake clock reading start, with cfg's job; it is shut down when the
// test ends, if the test has not.
func startOn(t *testing.T, start time.Time, cfg job.Config) *scheduled {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	rc, err := embedded.New(ctx, embedded.Config{Dir: filepath.Join(t.TempDir(), "registry"), Namespace: "jobtest"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	s := &scheduled{clock: jobtest.NewClock(start), runs: make(chan run, 16), ended: make(chan time.Time, 16), ctx: ctx}
	s.sched, err = job.NewScheduler(rc, job.WithServerID("test-1"), job.WithClock(s.clock),
		job.WithFireListener(listener.FireFuncs{Ended: func(f listener.Fire) { s.ended <- f.FireTime }}),
		job.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	err = s.sched.Add(ctx, cfg, job.SimpleFunc(func(_ context.Context, sc job.ShardingContext) error {
		s.runs <- run{fire: sc.FireTime, now: s.clock.Now(), kind: sc.Kind}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.sched.Shutdown(ctx) })
	return s
}

// waiting waits until n timers wait on the clock: the scheduler's for its
// next fire, and any fire's waiting for its time.
func (s *scheduled) waiting(t *testing.T, n int) {
	t.Helper()
	if err := s.clock.WaitForTimers(s.ctx, n); err != nil {
		t.Fatalf("%d timers do not wait on the clock (%d do): %v", n, s.clock.Timers(), err)
	}
}

// fired waits for the fire at to end, and checks that it ran items
// executions, each for the fire at with the clock reading at. A test moves
// the clock on once the fire has ended: a fire that found its items busy
// with the one before would be made up as a misfire.
func (s *scheduled) fired(t *testing.T, at time.Time, items int) {
	t.Helper()
	select {
	case end := <-s.ended:
		if !end.Equal(at) {
			t.Fatalf("the fire at %v ended; want the one at %v", end, at)
		}
	case <-s.ctx.Done():
		t.Fatalf("the fire at %v did not end (the clock at %v)", at, s.clock.Now())
	}
	for range items {
		select {
		case r := <-s.runs:
			if !r.fire.Equal(at) || !r.now.Equal(at) || r.kind != job.KindFire {
				t.Fatalf("ran a %s for the fire at %v with the clock at %v; want the fire at %v at its time", r.kind, r.fire, r.now, at)
			}
		default:
			t.Fatalf("the fire at %v ended with an item not run", at)
		}
	}
}

// shutdown shuts the scheduler down and checks that it ran nothing more.
func (s *scheduled) shutdown(t *testing.T) {
	t.Helper()
	if err := s.sched.Shutdown(s.ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case r := <-s.runs:
		t.Fatalf("an unexpected run: a %s for the fire at %v with the clock at %v", r.kind, r.fire, r.now)
	default:
	}
}

var every = job.Config{Name: "every-minute", Cron: "0 * * * * *", TimeZone: "UTC", ShardingTotalCount: 2}

func TestFiresComeAtTheClocksTimesAndOnlyThen(t *testing.T) {
	s := startOn(t, start, every)
	s.waiting(t, 1)
	// Just short of the fire, and short of its lead: nothing runs.
	s.clock.Set(start.Add(59 * time.Second))
	s.waiting(t, 1)
	s.clock.Advance(time.Second)
	s.fired(t, start.Add(time.Minute), 2)
	for i := 2; i <= 3; i++ {
		s.waiting(t, 1)
		s.clock.Advance(time.Minute)
		s.fired(t, start.Add(time.Duration(i)*time.Minute), 2)
	}
	s.shutdown(t)
}

func TestNothingFiresWhileTheClockStands(t *testing.T) {
	s := startOn(t, start, every)
	s.waiting(t, 1)
	// Real time passes, the clock does not: no fire. (A wait that can only
	// miss a wrong fire, never fail a right test.)
	time.Sleep(200 * time.Millisecond)
	s.shutdown(t)
}

// A fire dispatched ahead of its time (the lead) waits for the clock, and
// jittered fires come at their jittered times.
func TestJitteredFiresWaitForTheirTimeOnTheClock(t *testing.T) {
	cfg := every
	cfg.Name, cfg.ShardingTotalCount, cfg.Jitter = "jittered", 1, 30*time.Second
	first, err := cfg.NextFireAfter(start)
	if err != nil {
		t.Fatal(err)
	}
	if first.Equal(start.Add(time.Minute)) {
		t.Fatalf("the jitter of %s's first fire is 0: name it otherwise", cfg.Name)
	}
	s := startOn(t, start, cfg)
	s.waiting(t, 1)
	s.clock.Set(first.Add(-time.Millisecond)) // within the lead: claimed, not run
	s.waiting(t, 2)                           // the next fire's timer, and this one's wait for its time
	select {
	case r := <-s.runs:
		t.Fatalf("ran the fire at %v with the clock at %v", r.fire, r.now)
	default:
	}
	s.clock.Set(first)
	s.fired(t, first, 1)
	second, err := cfg.NextFireAfter(first)
	if err != nil {
		t.Fatal(err)
	}
	s.waiting(t, 1)
	s.clock.Set(second)
	s.fired(t, second, 1)
	s.shutdown(t)
}

// A pause holds the fires before its end; an excluded day has none.
func TestPauseAndCalendarGoByTheClock(t *testing.T) {
	t.Run("paused", func(t *testing.T) {
		cfg := every
		cfg.ShardingTotalCount, cfg.PausedUntil = 1, start.Add(150*time.Second)
		s := startOn(t, start, cfg)
		for range 3 {
			s.waiting(t, 1)
			s.clock.Advance(time.Minute)
		}
		s.fired(t, start.Add(3*time.Minute), 1) // the first after 09:02:30
		s.shutdown(t)
	})
	t.Run("excluded", func(t *testing.T) {
		cfg := job.Config{Name: "daily", Cron: "0 0 9 * * *", TimeZone: "UTC", ShardingTotalCount: 1, Exclude: "2030-01-02"}
		s := startOn(t, start, cfg)
		for range 2 {
			s.waiting(t, 1)
			s.clock.Advance(24 * time.Hour)
		}
		s.fired(t, start.Add(48*time.Hour), 1)
		s.shutdown(t)
	})
}

func TestShutdownLeavesNoTimerOnTheClock(t *testing.T) {
	s := startOn(t, start, every)
	s.waiting(t, 1)
	s.clock.Advance(time.Minute)
	s.fired(t, start.Add(time.Minute), 2)
	s.shutdown(t)
	if n := s.clock.Timers(); n != 0 {
		t.Fatalf("%d timers still wait on the clock after Shutdown", n)
	}
	s.clock.Advance(time.Hour)
	time.Sleep(100 * time.Millisecond) // as above: can only miss a wrong run
	select {
	case r := <-s.runs:
		t.Fatalf("ran the fire at %v after Shutdown", r.fire)
	default:
	}
}

// MaxTimeDiff checks the host's real clock, not the fake one: a clock
// years ahead of the registry's still fires a job that sets it. The first
// reconcile round measures the difference as the scheduler starts; the
// later fires come after it.
func TestAClockInAnotherYearIsNoSkewedHost(t *testing.T) {
	cfg := every
	cfg.ShardingTotalCount, cfg.MaxTimeDiff = 1, time.Second
	s := startOn(t, start, cfg)
	for i := 1; i <= 3; i++ {
		s.waiting(t, 1)
		s.clock.Advance(time.Minute)
		s.fired(t, start.Add(time.Duration(i)*time.Minute), 1)
	}
	s.shutdown(t)
}
