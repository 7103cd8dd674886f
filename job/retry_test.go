package job_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
)

// attemptLog is what a retrying test job saw: every attempt of every
// item run, across instances, and whether two ever overlapped.
type attemptLog struct {
	mu       sync.Mutex
	attempts []attemptRec
	running  map[int]int // item → attempts in progress, on any instance
	overlaps []string
	sig      chan struct{}
}

type attemptRec struct {
	server       string
	item         int
	fire         time.Time
	attempt      int
	kind         job.Kind
	begin, end   time.Time
	err          error
	listenerSeen int // the listener's Attempt, filled in by its After
}

func newAttemptLog() *attemptLog {
	return &attemptLog{running: map[int]int{}, sig: make(chan struct{}, 1)}
}

// job returns instance server's job: it fails while fail says so.
func (l *attemptLog) job(server string, fail func(sc job.ShardingContext) bool) job.Job {
	return job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		l.mu.Lock()
		l.running[sc.Item]++
		if n := l.running[sc.Item]; n > 1 {
			l.overlaps = append(l.overlaps, fmt.Sprintf("item %d: %d runs at once (%s, fire %v attempt %d)", sc.Item, n, server, sc.FireTime, sc.Attempt))
		}
		l.mu.Unlock()
		rec := attemptRec{server: server, item: sc.Item, fire: sc.FireTime, attempt: sc.Attempt, kind: sc.Kind, begin: time.Now()}
		// Long enough that a second run at once would be seen.
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
		if fail(sc) {
			rec.err = fmt.Errorf("attempt %d of item %d fails on purpose", sc.Attempt, sc.Item)
		}
		rec.end = time.Now()
		l.mu.Lock()
		l.running[sc.Item]--
		l.attempts = append(l.attempts, rec)
		l.mu.Unlock()
		select {
		case l.sig <- struct{}{}:
		default:
		}
		return rec.err
	})
}

func (l *attemptLog) snapshot() []attemptRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]attemptRec(nil), l.attempts...)
}

// wait waits until cond holds of the attempts so far, or fails the test
// at the deadline.
func (l *attemptLog) wait(t *testing.T, d time.Duration, what string, cond func([]attemptRec) bool) []attemptRec {
	t.Helper()
	deadline := time.After(waitSlack * d)
	for {
		if recs := l.snapshot(); cond(recs) {
			return recs
		}
		select {
		case <-l.sig:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s: not seen within %v; attempts: %+v", what, waitSlack*d, l.snapshot())
		}
	}
}

func (l *attemptLog) checkNoOverlap(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.overlaps {
		t.Error(o)
	}
}

// A failing item run is tried again on its owner after the backoff,
// doubling, with ShardingContext.Attempt counting, until it succeeds; the
// listeners see every attempt, and JobStats.Retries counts the retries.
func TestRetryRunsAFailedItemAgainWithBackoff(t *testing.T) {
	ns := namespace(t)
	log := newAttemptLog()
	var first time.Time
	var mu sync.Mutex
	fail := func(sc job.ShardingContext) bool {
		mu.Lock()
		defer mu.Unlock()
		if first.IsZero() {
			first = sc.FireTime
		}
		return sc.FireTime.Equal(first) && sc.Attempt < 3 // the first fire fails twice
	}
	var lmu sync.Mutex
	var seen []listener.Execution
	cfg := job.Config{Name: "retried", Cron: "*/5 * * * * *", ShardingTotalCount: 1,
		Retry: job.RetryPolicy{Attempts: 4, Backoff: 300 * time.Millisecond, MaxBackoff: time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "s1", job.WithListener(listener.Funcs{After: func(e listener.Execution) {
		lmu.Lock()
		seen = append(seen, e)
		lmu.Unlock()
	}}))
	if err := s.Add(ctx, cfg, log.job("s1", fail)); err != nil {
		t.Fatal(err)
	}
	running(t, ctx, "s1", rc, s)

	recs := log.wait(t, 20*time.Second, "three attempts of the first fire", func(rs []attemptRec) bool {
		n := 0
		for _, r := range rs {
			if r.fire.Equal(rs[0].fire) {
				n++
			}
		}
		return n >= 3
	})
	var fire []attemptRec
	for _, r := range recs {
		if r.fire.Equal(recs[0].fire) {
			fire = append(fire, r)
		}
	}
	for i, r := range fire[:3] {
		if r.attempt != i+1 {
			t.Errorf("run %d of the fire says attempt %d", i+1, r.attempt)
		}
		if (r.err != nil) != (i < 2) {
			t.Errorf("attempt %d: err %v", r.attempt, r.err)
		}
	}
	// The waits: at least the backoff, then twice it (no jitter).
	if gap := fire[1].begin.Sub(fire[0].end); gap < 300*time.Millisecond {
		t.Errorf("the first retry started %v after the failure, want at least 300ms", gap)
	}
	if gap := fire[2].begin.Sub(fire[1].end); gap < 600*time.Millisecond {
		t.Errorf("the second retry started %v after the failure, want at least 600ms (doubled)", gap)
	}
	if len(fire) != 3 {
		t.Errorf("the fire ran %d attempts, want 3 (it succeeded on the third)", len(fire))
	}
	waitUntil(t, 5*time.Second, func() bool {
		lmu.Lock()
		defer lmu.Unlock()
		return len(seen) >= 3
	})
	lmu.Lock()
	for i, e := range seen[:3] {
		if e.Attempt != i+1 || (e.Err != nil) != (i < 2) {
			t.Errorf("listener call %d: attempt %d err %v", i+1, e.Attempt, e.Err)
		}
	}
	lmu.Unlock()
	for _, js := range s.Stats().Jobs {
		if js.Job == "retried" && js.Retries != 2 {
			t.Errorf("JobStats.Retries = %d, want 2", js.Retries)
		}
	}
	log.checkNoOverlap(t)
}

// A retry whose wait would end after the item's next fire yields to that
// fire: the failed fire is not tried again, and the next fire runs as
// usual, its first attempt.
func TestRetryYieldsToTheNextFire(t *testing.T) {
	ns := namespace(t)
	log := newAttemptLog()
	var mu sync.Mutex
	var first time.Time
	fail := func(sc job.ShardingContext) bool {
		mu.Lock()
		defer mu.Unlock()
		if first.IsZero() {
			first = sc.FireTime
		}
		return sc.FireTime.Equal(first)
	}
	cfg := job.Config{Name: "yielding", Cron: "*/2 * * * * *", ShardingTotalCount: 1,
		Retry: job.RetryPolicy{Attempts: 3, Backoff: 10 * time.Second, MaxBackoff: 10 * time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "s1")
	if err := s.Add(ctx, cfg, log.job("s1", fail)); err != nil {
		t.Fatal(err)
	}
	running(t, ctx, "s1", rc, s)
	recs := log.wait(t, 15*time.Second, "two fires after the failed one", func(rs []attemptRec) bool {
		fires := map[time.Time]bool{}
		for _, r := range rs {
			fires[r.fire] = true
		}
		return len(fires) >= 3
	})
	for _, r := range recs {
		if r.attempt != 1 {
			t.Errorf("fire %v ran attempt %d: the retry did not yield to the next fire", r.fire, r.attempt)
		}
	}
	if !recs[0].fire.Equal(first) || recs[0].err == nil {
		t.Errorf("the first run %+v is not the failed fire %v", recs[0], first)
	}
	if !recs[1].fire.After(first) {
		t.Errorf("after the failed fire ran %+v", recs[1])
	}
	log.checkNoOverlap(t)
}

// A second instance joining while a retry waits (a reshard that may move
// the item) never makes the item run twice at once: the waiting retry
// keeps the item's running mark, and the item's fires each succeed once.
func TestRetryNeverRunsTwiceAtOnceAcrossAReshard(t *testing.T) {
	ns := namespace(t)
	log := newAttemptLog()
	var mu sync.Mutex
	failed := map[int]bool{} // items whose first attempt has failed
	fail := func(sc job.ShardingContext) bool {
		mu.Lock()
		defer mu.Unlock()
		if sc.Attempt == 1 && !failed[sc.Item] {
			failed[sc.Item] = true
			return true
		}
		return false
	}
	cfg := job.Config{Name: "resharded", Cron: "*/3 * * * * *", ShardingTotalCount: 4,
		Retry: job.RetryPolicy{Attempts: 2, Backoff: 1500 * time.Millisecond, MaxBackoff: 1500 * time.Millisecond}}
	start := func(id string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rc, s := connect(t, ctx, ns, id)
		if err := s.Add(ctx, cfg, log.job(id, fail)); err != nil {
			t.Fatal(err)
		}
		running(t, ctx, id, rc, s)
	}
	start("s1")
	// The first fire's items have failed on s1, and their retries wait.
	log.wait(t, 15*time.Second, "the first attempts failing", func(rs []attemptRec) bool {
		n := 0
		for _, r := range rs {
			if r.err != nil {
				n++
			}
		}
		return n >= 4
	})
	start("s2")
	// Every failed fire's retry ran, and later fires ran on both.
	recs := log.wait(t, 20*time.Second, "the retries and fires on both instances", func(rs []attemptRec) bool {
		retried, on2 := 0, false
		for _, r := range rs {
			if r.attempt == 2 && r.err == nil {
				retried++
			}
			on2 = on2 || r.server == "s2"
		}
		return retried >= 4 && on2
	})
	log.checkNoOverlap(t)
	wins := map[string]int{}
	for _, r := range recs {
		if r.err == nil {
			wins[fmt.Sprint(r.item, r.fire.UnixMilli())]++
		}
		if r.attempt == 2 && r.server != "s1" {
			t.Errorf("a retry ran on %s, not on the owner that failed: %+v", r.server, r)
		}
	}
	for k, n := range wins {
		if n > 1 {
			t.Errorf("item and fire %s succeeded %d times", k, n)
		}
	}
}

// A bad retry policy is refused, by Add as by Validate, naming the field.
func TestRetryBadPolicyIsRefused(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "s1")
	defer rc.Close()
	cfg := job.Config{Name: "bad-retry", Cron: "* * * * * *", ShardingTotalCount: 1,
		Retry: job.RetryPolicy{Attempts: 3, Backoff: time.Minute, MaxBackoff: time.Second, Jitter: 2}}
	err := s.Add(ctx, cfg, job.SimpleFunc(func(context.Context, job.ShardingContext) error { return nil }))
	if !errors.Is(err, job.ErrInvalidConfig) {
		t.Fatalf("Add of a bad retry policy: %v", err)
	}
	for _, want := range []string{"retry.maxBackoff 1s", "retry.jitter 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q: %v", want, err)
		}
	}
}

// A shutdown ends a retry's wait at once: the run is cut short and, with
// failover, handed over with its count in the queue entry; the next owner
// runs the fire as its next attempt.
func TestRetryWaitEndsAtShutdownAndHandsTheFireOver(t *testing.T) {
	ns := namespace(t)
	log := newAttemptLog()
	cfg := job.Config{Name: "handed", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1, Failover: true,
		Retry: job.RetryPolicy{Attempts: 3, Backoff: time.Hour, MaxBackoff: time.Hour}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc1, s1 := connect(t, ctx, ns, "s1")
	if err := s1.Add(ctx, cfg, log.job("s1", func(job.ShardingContext) bool { return true })); err != nil {
		t.Fatal(err)
	}
	in1 := running(t, ctx, "s1", rc1, s1)
	obs := observer(t, ns)
	if _, err := obs.Create(tctx(t), "/handed/servers/s1/trigger", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	log.wait(t, 15*time.Second, "the first attempt failing on s1", func(rs []attemptRec) bool { return len(rs) >= 1 })

	rc2, s2 := connect(t, ctx, ns, "s2")
	if err := s2.Add(ctx, cfg, log.job("s2", func(job.ShardingContext) bool { return false })); err != nil {
		t.Fatal(err)
	}
	running(t, ctx, "s2", rc2, s2)

	// The wait is an hour: a shutdown that waited for it would miss its
	// deadline.
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := in1.sched.Shutdown(sctx); err != nil {
		t.Fatalf("shutdown during a retry's wait: %v", err)
	}
	in1.rc.Close()
	in1.sched = nil

	recs := log.wait(t, 15*time.Second, "the fire run by s2", func(rs []attemptRec) bool {
		for _, r := range rs {
			if r.server == "s2" && r.err == nil {
				return true
			}
		}
		return false
	})
	for _, r := range recs {
		if r.server == "s1" && r.attempt != 1 {
			t.Errorf("s1 ran attempt %d: the hour's wait did not end at the shutdown", r.attempt)
		}
	}
	last := recs[len(recs)-1]
	if !last.fire.Equal(recs[0].fire) || last.kind != job.KindFailover {
		t.Errorf("s2 ran %s fire %v, not the handed-over %v as a failover run", last.kind, last.fire, recs[0].fire)
	}
	if last.attempt != 2 {
		t.Errorf("s2 ran attempt %d of the handed-over fire, want 2: the count did not survive the hand-over", last.attempt)
	}
	log.checkNoOverlap(t)
}

// A crash during a retry's wait loses no count: the owner wrote the
// fire's failed attempts before it waited (execution/{item}/retry), the
// leader queues the fire with them, and the instance that takes it over
// runs it as the next attempt; its completion removes the node. s1 runs
// the first fire, fails every attempt of the second and is killed
// (its session closed, nothing written after) once the count is written;
// s2, started after, takes the fire over.
func TestRetryCountSurvivesACrash(t *testing.T) { retryCountSurvivesACrash(t, true) }

// The same without failover: s2 gains the item at the reshard, finds the
// fire missing from its record, and makes it up as the next attempt.
func TestRetryCountSurvivesACrashWithoutFailover(t *testing.T) {
	retryCountSurvivesACrash(t, false)
}

func retryCountSurvivesACrash(t *testing.T, failover bool) {
	ns := namespace(t)
	log := newAttemptLog()
	var mu sync.Mutex
	var first time.Time // s1's first fire, which succeeds
	failOnS1 := func(sc job.ShardingContext) bool {
		mu.Lock()
		defer mu.Unlock()
		if first.IsZero() {
			first = sc.FireTime
		}
		return !sc.FireTime.Equal(first)
	}
	cfg := job.Config{Name: "crashed", Cron: "*/5 * * * * *", ShardingTotalCount: 1, Failover: failover,
		Retry: job.RetryPolicy{Attempts: 5, Backoff: 4 * time.Second, MaxBackoff: 4 * time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rc1, s1 := connect(t, ctx, ns, "s1")
	if err := s1.Add(ctx, cfg, log.job("s1", failOnS1)); err != nil {
		t.Fatal(err)
	}
	in1 := running(t, ctx, "s1", rc1, s1)
	recs := log.wait(t, 30*time.Second, "a fire failing on s1 after one that succeeded", func(rs []attemptRec) bool {
		for _, r := range rs {
			if r.err != nil {
				return true
			}
		}
		return false
	})
	var failedFire time.Time
	for _, r := range recs {
		if r.err != nil {
			failedFire = r.fire
			break
		}
	}
	obs := observer(t, ns)
	waitUntil(t, 30*time.Second, func() bool {
		ok, _, err := obs.Exists(tctx(t), "/crashed/execution/0/retry")
		return err == nil && ok
	})
	in1.crash(t)
	failedOnS1 := 0
	for _, r := range log.snapshot() {
		if r.server == "s1" && r.fire.Equal(failedFire) && r.err != nil {
			failedOnS1++
		}
	}

	rc2, s2 := connect(t, ctx, ns, "s2")
	if err := s2.Add(ctx, cfg, log.job("s2", func(job.ShardingContext) bool { return false })); err != nil {
		t.Fatal(err)
	}
	running(t, ctx, "s2", rc2, s2)
	recs = log.wait(t, 30*time.Second, "s2 running the fire that failed on s1", func(rs []attemptRec) bool {
		for _, r := range rs {
			if r.server == "s2" && r.fire.Equal(failedFire) {
				return true
			}
		}
		return false
	})
	for _, r := range recs {
		if r.server != "s2" || !r.fire.Equal(failedFire) {
			continue
		}
		if want := map[bool]job.Kind{true: job.KindFailover, false: job.KindMisfire}[failover]; r.kind != want {
			t.Errorf("s2 ran the fire that failed on s1 as %s, want %s", r.kind, want)
		}
		// The count written before s1's last wait: at least the first
		// failure, at most every failure s1 had.
		if r.attempt < 2 || r.attempt > failedOnS1+1 {
			t.Errorf("s2 ran attempt %d of the fire that failed %d times on s1: the count did not survive the crash", r.attempt, failedOnS1)
		}
	}
	waitUntil(t, 30*time.Second, func() bool {
		ok, _, err := obs.Exists(tctx(t), "/crashed/execution/0/retry")
		return err == nil && !ok
	})
	log.checkNoOverlap(t)
}
