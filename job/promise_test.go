package job_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// The promise ElasticJob keeps, with the defaults: a crash makes run
// again only what was in flight — the run going at the crash, or one
// whose completion was being written — never a fire whose completion had
// been recorded. Instance a runs a one-second job, b waits beside it; a
// is killed (its session closed, nothing written after) between runs: b
// takes the item and runs again at most the last fire a ran (its
// completion may have been in flight), none before it, and loses none.
// It runs on either registry (make test-etcd).
func TestClusterACrashWithDefaultsRunsNoCompletedFireAgain(t *testing.T) {
	crashRunsNoCompletedFireAgain(t, true)
}

// The same without failover: b takes the item at the reshard the crash
// causes, and its first fire makes up what the record and a's completion
// journal do not list.
func TestClusterACrashWithoutFailoverRunsNoCompletedFireAgain(t *testing.T) {
	crashRunsNoCompletedFireAgain(t, false)
}

func crashRunsNoCompletedFireAgain(t *testing.T, failover bool) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("promise", 1)
	cfg.Failover = failover
	start := time.Now()
	a := startInstance(t, ns, "a", cfg, rec)
	rec.waitFires(t, start, 2, 1, 30*time.Second)
	startInstance(t, ns, "b", cfg, rec)
	// Four fires of a's after b joined, then the crash, right after a run.
	for {
		rec.waitFires(t, time.Now(), 1, 1, 30*time.Second)
		n := 0
		for _, r := range rec.snapshot() {
			if r.server == "a" && r.begin.After(start) {
				n++
			}
		}
		if n >= 6 {
			break
		}
	}
	crashed := time.Now()
	a.crash(t)
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if r.server == "b" && r.begin.After(crashed) {
				return true
			}
		}
		return false
	})
	end := rec.waitFires(t, time.Now(), 2, 1, 30*time.Second)[1]
	recs := rec.snapshot()
	checkEveryFire(t, recs, start.Add(time.Second), end, 1)

	var ranOnA []time.Time
	for _, r := range recs {
		if r.server == "a" {
			ranOnA = append(ranOnA, r.fire)
		}
	}
	if len(ranOnA) == 0 {
		t.Fatal("a ran nothing")
	}
	last := ranOnA[len(ranOnA)-1]
	for _, f := range ranOnA[:len(ranOnA)-1] {
		for _, r := range recs {
			if r.server == "b" && r.begin.After(crashed) && standsFor(r, f) {
				t.Errorf("b ran fire %s again (as %s, fires %s–%s) after a's crash: a had completed it before its last run %s",
					f.Format("15:04:05"), r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"), last.Format("15:04:05"))
			}
		}
	}
	for _, r := range recs {
		if r.server == "b" && r.kind != job.KindFire {
			t.Logf("b made up fires %s–%s (%s)", r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.kind)
		}
	}
}

// A trigger's completion releases the item's held mark (a trigger writes
// no record, and a mark no record covers reads as a run still going): it
// writes first what the held fires deferred. With records written behind
// (an opted-in interval), a deferred record left behind the released mark
// made the item's next owner run again, after a reshard right after the
// trigger, the fires this instance had run. a runs the job, is paused,
// triggered, then disabled: by the time the trigger's mark is gone the
// record covers every fire a ran, and b, which takes the item, runs none
// of them again.
func TestClusterATriggerReleasingAHeldMarkWritesItsDeferredRecord(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("trig", 1)
	cfg.RecordInterval = time.Minute
	obs := observer(t, ns)
	events := make(chan job.Event, 256)
	start := time.Now()
	startInstance(t, ns, "a", cfg, rec, eventsTo(events))
	rec.waitFires(t, start, 4, 1, 30*time.Second)
	if _, err := obs.Create(tctx(t), "/trig/servers/a/paused", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, job.EventPaused, 30*time.Second)
	if _, err := obs.Create(tctx(t), "/trig/servers/a/trigger", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if r.kind == job.KindTrigger {
				return true
			}
		}
		return false
	})
	// The trigger's completion deletes the mark after writing the record.
	waitUntil(t, 30*time.Second, func() bool {
		ok, _, err := obs.Exists(tctx(t), "/trig/execution/0/running")
		return err == nil && !ok
	})
	var fires []record
	for _, r := range rec.snapshot() {
		if r.kind == job.KindFire {
			fires = append(fires, r)
		}
	}
	last := latestFire(fires, 0)
	if _, through := recordOf(t, obs, "trig", 0); !through.Equal(last) {
		t.Errorf("after the trigger released the mark, the record covers through %s; a ran fires through %s",
			through.Format("15:04:05"), last.Format("15:04:05"))
	}

	// The reshard: a disabled, the item moves to b.
	startInstance(t, ns, "b", cfg, rec)
	if _, err := obs.Create(tctx(t), "/trig/servers/a/disabled", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if r.server == "b" && r.kind == job.KindFire {
				return true
			}
		}
		return false
	})
	for _, f := range fires {
		for _, r := range rec.snapshot() {
			if r.server == "b" && standsFor(r, f.fire) {
				t.Errorf("b ran fire %s again (as %s, fires %s–%s): a had run it before the trigger",
					f.fire.Format("15:04:05"), r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"))
			}
		}
	}
}

// A parent's record keeps each recent fire's result, not only the latest
// run's error: a dependent that checks its parent's fire late, after later
// fires of the parent ran, reads that fire's result. Parent p fails its
// third fire F and succeeds the ones after; dependent d's run before F is
// held until p's run of F+1 has returned, so d's next run makes up F (and
// what followed) late, when p's latest run succeeded: it must still be
// told F failed.
func TestClusterADependentCheckingLateReadsTheFailureOfItsFire(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "s1")

	var mu sync.Mutex
	var pFires []time.Time
	var failed time.Time
	afterNext := make(chan struct{}) // closed once p's run of F+1 returned
	var closeOnce sync.Once
	parent := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		if sc.Kind != job.KindFire {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		pFires = append(pFires, sc.FireTime)
		switch {
		case len(pFires) == 3:
			failed = sc.FireTime
			return errors.New("parent fire failed")
		case !failed.IsZero() && sc.FireTime.After(failed):
			closeOnce.Do(func() { close(afterNext) })
		}
		return nil
	})
	type dRun struct {
		kind          job.Kind
		fire, through time.Time
		parentErr     error
	}
	runs := make(chan dRun, 64)
	var dFires atomic.Int32
	dependent := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		if sc.Kind == job.KindFire && dFires.Add(1) == 2 {
			// The run before F: held until p has run F+1.
			select {
			case <-afterNext:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		runs <- dRun{sc.Kind, sc.FireTime, sc.Through, sc.ParentErr}
		return nil
	})
	if err := s.Add(ctx, job.Config{Name: "p", Cron: "* * * * * *", ShardingTotalCount: 1}, parent); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, job.Config{Name: "d", Cron: "* * * * * *", ShardingTotalCount: 1, After: "p", OnParentFailure: job.ParentRun}, dependent); err != nil {
		t.Fatal(err)
	}
	running(t, ctx, "s1", rc, s)

	timeout := time.After(60 * time.Second)
	for {
		var r dRun
		select {
		case r = <-runs:
		case <-timeout:
			t.Fatal("no run of d stood for p's failed fire")
		}
		mu.Lock()
		f := failed
		mu.Unlock()
		if f.IsZero() || r.through.Before(f) || r.fire.After(f) {
			continue
		}
		// This run stands for F.
		if !errors.Is(r.parentErr, job.ErrParentFailed) {
			t.Fatalf("d's %s run of fires %s–%s: ParentErr %v; p's fire %s failed",
				r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.parentErr, f.Format("15:04:05"))
		}
		t.Logf("d's %s run of fires %s–%s: %v", r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.parentErr)
		return
	}
}

// scRun is what a run was told: its kind, its fires and which of them may
// have run already.
type scRun struct {
	server, kind   string
	fire, through  time.Time
	mayHaveRunThru time.Time
	mayHaveRun     func(time.Time) bool
}

// A failover run after a crash during a run is told that the fire the
// crashed instance was running may have run: a job whose side effects must
// not repeat checks that fire, and only the fires up to the crash. a runs
// the job until one of its runs blocks; a crashes during that run; b's
// failover run stands for that fire and says it may have run.
func TestClusterAFailoverRunAfterACrashSaysWhatMayHaveRun(t *testing.T) {
	ns := namespace(t)
	cfg := everySecond("mayrun", 1)
	cfg.Failover = true
	runs := make(chan scRun, 256)
	blocked := make(chan time.Time, 1)
	var aRuns atomic.Int32
	jobOf := func(server string) job.Job {
		return job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
			if server == "a" && aRuns.Add(1) == 4 {
				blocked <- sc.FireTime // the crash comes during this run
				<-ctx.Done()
				return ctx.Err()
			}
			runs <- scRun{server, string(sc.Kind), sc.FireTime, sc.Through, sc.MayHaveRunThrough, sc.MayHaveRun}
			return nil
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcA, sA := connect(t, ctx, ns, "a")
	if err := sA.Add(ctx, cfg, jobOf("a")); err != nil {
		t.Fatal(err)
	}
	a := running(t, ctx, "a", rcA, sA)
	rcB, sB := connect(t, ctx, ns, "b")
	if err := sB.Add(ctx, cfg, jobOf("b")); err != nil {
		t.Fatal(err)
	}
	running(t, ctx, "b", rcB, sB)
	var inFlight time.Time
	select {
	case inFlight = <-blocked:
	case <-time.After(60 * time.Second):
		t.Fatal("a's run never blocked")
	}
	a.crash(t)
	timeout := time.After(60 * time.Second)
	for {
		var r scRun
		select {
		case r = <-runs:
		case <-timeout:
			t.Fatalf("no run on b stood for fire %s after a's crash", inFlight.Format("15:04:05"))
		}
		if r.server != "b" || r.fire.After(inFlight) || r.through.Before(inFlight) {
			if r.server == "b" && !r.mayHaveRunThru.IsZero() {
				t.Errorf("b's %s run of fires %s–%s says fires through %s may have run; none of them did", r.kind,
					r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.mayHaveRunThru.Format("15:04:05"))
			}
			continue
		}
		if !r.mayHaveRun(inFlight) {
			t.Fatalf("b's %s run of fires %s–%s (may have run through %v) does not say fire %s, in flight at a's crash, may have run",
				r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.mayHaveRunThru, inFlight.Format("15:04:05"))
		}
		t.Logf("b's %s run of fires %s–%s: may have run through %s", r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.mayHaveRunThru.Format("15:04:05"))
		return
	}
}

// A make-up of fires that never ran says nothing may have run: a run held
// past the next fires makes the item miss them, and the misfire run that
// makes them up is told none of its fires ran.
func TestMakeUpOfFiresThatNeverRanSaysNothingMayHaveRun(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	var long atomic.Bool
	var mu sync.Mutex
	var runs []scRun
	rec.holdFor = func(sc job.ShardingContext) time.Duration {
		mu.Lock()
		runs = append(runs, scRun{"s1", string(sc.Kind), sc.FireTime, sc.Through, sc.MayHaveRunThrough, sc.MayHaveRun})
		mu.Unlock()
		if sc.Kind == job.KindFire && long.CompareAndSwap(false, true) {
			return 2500 * time.Millisecond
		}
		return 0
	}
	startInstance(t, ns, "s1", everySecond("makeup", 1), rec)
	waitUntil(t, 60*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if r.kind == job.KindMisfire {
				return true
			}
		}
		return false
	})
	mu.Lock()
	defer mu.Unlock()
	for _, r := range runs {
		if !r.mayHaveRunThru.IsZero() {
			t.Errorf("%s run of fires %s–%s says fires through %s may have run; none did", r.kind,
				r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.mayHaveRunThru.Format("15:04:05"))
		}
	}
}

// A starting deadline never reports as expired a fire that may have run: a
// fire a crashed instance was running when it went, older than the
// deadline by the time its failover run starts, is dropped but not
// counted as expired (it ran, at least in part). a blocks in a run, is
// crashed once that fire is older than the deadline, and b takes the item
// over reporting no expired fire. Which of b's paths makes the missed fires
// up is a race, and both apply the deadline: the failover of a's running
// item, or the make-up of the item's new owner after the reshard (a
// misfire run; the failover then finds those fires covered). On
// PostgreSQL a closed session's rows go at once, and under load the
// reshard often wins.
func TestClusterADeadlineDoesNotReportAFireThatRanAsExpired(t *testing.T) {
	ns := namespace(t)
	cfg := everySecond("deadran", 1)
	cfg.Failover = true
	// Long enough that b's failover run starts within it on a loaded
	// machine (with 1 s, a CI run of the PostgreSQL matrix beside the
	// etcd one had every fire of it older than the deadline: no run).
	cfg.StartingDeadline = 3 * time.Second
	runs := make(chan scRun, 256)
	blocked := make(chan time.Time, 1)
	var aRuns atomic.Int32
	jobOf := func(server string) job.Job {
		return job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
			if server == "a" && aRuns.Add(1) == 4 {
				blocked <- sc.FireTime
				<-ctx.Done()
				return ctx.Err()
			}
			runs <- scRun{server, string(sc.Kind), sc.FireTime, sc.Through, sc.MayHaveRunThrough, sc.MayHaveRun}
			return nil
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcA, sA := connect(t, ctx, ns, "a")
	if err := sA.Add(ctx, cfg, jobOf("a")); err != nil {
		t.Fatal(err)
	}
	a := running(t, ctx, "a", rcA, sA)
	events := make(chan job.Event, 256)
	rcB, sB := connect(t, ctx, ns, "b", eventsTo(events))
	if err := sB.Add(ctx, cfg, jobOf("b")); err != nil {
		t.Fatal(err)
	}
	b := running(t, ctx, "b", rcB, sB)
	var inFlight time.Time
	select {
	case inFlight = <-blocked:
	case <-time.After(60 * time.Second):
		t.Fatal("a's run never blocked")
	}
	// The fire a runs becomes older than the deadline before the crash.
	time.Sleep(time.Until(inFlight.Add(cfg.StartingDeadline + 1500*time.Millisecond)))
	a.crash(t)
	timeout := time.After(60 * time.Second)
	for {
		var r scRun
		select {
		case r = <-runs:
		case <-timeout:
			t.Fatal("no make-up run on b after a's crash")
		}
		if r.server == "b" && (r.kind == string(job.KindFailover) || r.kind == string(job.KindMisfire)) && r.through.After(inFlight) {
			t.Logf("b's %s run of fires %s–%s (a was running %s)", r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"), inFlight.Format("15:04:05"))
			break
		}
	}
	for {
		select {
		case ev := <-events:
			if ev.Kind == job.EventFiresExpired {
				t.Errorf("b reported %d fires expired (%s): a was running fire %s, which may have run", ev.Units, ev.Detail, inFlight.Format("15:04:05"))
			}
			continue
		default:
		}
		break
	}
	if st := b.sched.Stats(); len(st.Jobs) != 1 || st.Jobs[0].FiresExpired != 0 {
		t.Errorf("b's stats %+v: want no fire expired", st.Jobs)
	}
}
