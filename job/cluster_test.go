package job_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

var nsCounter atomic.Int64

// namespace returns a namespace unique to this test run.
func namespace(t *testing.T) string {
	return fmt.Sprintf("t%d-%d", os.Getpid(), nsCounter.Add(1))
}

func testLogger(t *testing.T) *slog.Logger { return testlog.Logger(t) }

// record is one execution seen by a test job.
type record struct {
	job    string
	server string
	fire   time.Time
	// through is the latest fire the execution stands for.
	through time.Time
	item    int
	kind    job.Kind
	begin   time.Time
	end     time.Time
}

// recorder collects executions from every instance of a test.
type recorder struct {
	mu   sync.Mutex
	recs []record
	hold time.Duration
	// holdFor, when set, decides each execution's duration.
	holdFor func(sc job.ShardingContext) time.Duration
	sig     chan struct{}
}

func newRecorder() *recorder { return &recorder{sig: make(chan struct{}, 1)} }

func (rc *recorder) job(server string) job.Job {
	return job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		begin := time.Now()
		hold := rc.hold
		if rc.holdFor != nil {
			hold = rc.holdFor(sc)
		}
		if hold > 0 {
			select {
			case <-time.After(hold):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		// Commit only while still the item's owner: this is the side
		// effect the invariants speak of.
		if err := sc.StillOwner(); err != nil {
			return err
		}
		rc.mu.Lock()
		rc.recs = append(rc.recs, record{job: sc.JobName, server: server, fire: sc.FireTime, through: sc.Through, item: sc.Item, kind: sc.Kind, begin: begin, end: time.Now()})
		rc.mu.Unlock()
		select {
		case rc.sig <- struct{}{}:
		default:
		}
		return nil
	})
}

func (rc *recorder) snapshot() []record {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]record(nil), rc.recs...)
}

// fires groups regular-fire executions by fire time.
func (rc *recorder) fires() map[time.Time][]record {
	out := map[time.Time][]record{}
	for _, r := range rc.snapshot() {
		if r.kind == job.KindFire {
			out[r.fire] = append(out[r.fire], r)
		}
	}
	return out
}

// waitFires waits until n regular fires after since are complete (all
// items recorded) or the deadline passes.
func (rc *recorder) waitFires(t *testing.T, since time.Time, n, items int, deadline time.Duration) []time.Time {
	t.Helper()
	timeout := time.After(waitSlack * deadline)
	for {
		var done []time.Time
		for f, recs := range rc.fires() {
			if f.After(since) && len(recs) >= items {
				done = append(done, f)
			}
		}
		if len(done) >= n {
			sort.Slice(done, func(i, j int) bool { return done[i].Before(done[j]) })
			return done[:n]
		}
		select {
		case <-rc.sig:
		case <-time.After(200 * time.Millisecond):
		case <-timeout:
			t.Fatalf("only %d of %d complete fires after %v within %v", len(done), n, since, deadline)
		}
	}
}

// instance is one scheduler with its own ZooKeeper session, as one process
// of a user's application would have.
type instance struct {
	id    string
	rc    regcenter.Center
	sched *job.Scheduler
}

func startInstance(t *testing.T, ns, id string, cfg job.Config, rec *recorder, opts ...job.Option) *instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, id, opts...)
	if err := s.Add(ctx, cfg, rec.job(id)); err != nil {
		t.Fatal(err)
	}
	return running(t, ctx, id, rc, s)
}

// running starts s, instance id on rc, and stops it when the test ends.
func running(t *testing.T, ctx context.Context, id string, rc regcenter.Center, s *job.Scheduler) *instance {
	t.Helper()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	in := &instance{id: id, rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })
	return in
}

// connect makes instance id's regcenter (4 s sessions) and scheduler,
// with nothing added or started.
func connect(t *testing.T, ctx context.Context, ns, id string, opts ...job.Option) (regcenter.Center, *job.Scheduler) {
	t.Helper()
	return connectVia(t, ctx, ns, id, nil, opts...)
}

// connectVia is connect with the scheduler on via(rc), a wrapper of the
// registry (rc itself when via is nil).
func connectVia(t *testing.T, ctx context.Context, ns, id string, via func(regcenter.Center) regcenter.Center, opts ...job.Option) (regcenter.Center, *job.Scheduler) {
	t.Helper()
	rc, err := regcenter.Open(ctx, onRegistry(regcenter.Config{Namespace: ns, SessionTimeout: 4 * time.Second}), regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatalf("regcenter: %v", err)
	}
	on := rc
	if via != nil {
		on = via(rc)
	}
	opts = append([]job.Option{job.WithServerID(id), job.WithLogger(testLogger(t).With("instance", id))}, opts...)
	s, err := job.NewScheduler(on, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rc, s
}

func (in *instance) stop(t *testing.T) {
	if in.sched == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := in.sched.Shutdown(ctx); err != nil {
		t.Errorf("shutdown %s: %v", in.id, err)
	}
	in.rc.Close()
	in.sched = nil
}

// crash ends the instance's session abruptly: no graceful leave, its
// ephemeral nodes vanish as a crashed process's would once ZooKeeper notices.
func (in *instance) crash(t *testing.T) {
	in.rc.Close() // closes the session: ephemerals go at once
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = in.sched.Shutdown(ctx) // its ZooKeeper calls fail: the center is closed
	in.sched = nil
}

// checkFire asserts that the fire ran every item exactly once and returns the
// servers that ran items.
func checkFire(t *testing.T, fire time.Time, recs []record, items int) map[string][]int {
	t.Helper()
	seen := map[int]int{}
	by := map[string][]int{}
	for _, r := range recs {
		seen[r.item]++
		by[r.server] = append(by[r.server], r.item)
	}
	for i := 0; i < items; i++ {
		if seen[i] != 1 {
			t.Errorf("fire %s: item %d ran %d times", fire.Format("15:04:05"), i, seen[i])
		}
	}
	if len(recs) != items {
		t.Errorf("fire %s: %d executions for %d items", fire.Format("15:04:05"), len(recs), items)
	}
	for s := range by {
		sort.Ints(by[s])
	}
	return by
}

func everySecond(name string, items int) job.Config {
	return job.Config{Name: name, Cron: "* * * * * *", ShardingTotalCount: items}
}

func TestClusterEveryItemOncePerFire(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("orders", 10)
	cfg.ShardingStrategy = "AVG_ALLOCATION" // ElasticJob's, by name: its exact assignment
	var ins []*instance
	for _, id := range []string{"s1", "s2", "s3"} {
		ins = append(ins, startInstance(t, ns, id, cfg, rec))
	}
	start := time.Now()
	// Skip the first fires, which may straddle the three joins.
	fires := rec.waitFires(t, start.Add(2*time.Second), 8, 10, 60*time.Second)
	byFire := rec.fires()
	for _, f := range fires {
		by := checkFire(t, f, byFire[f], 10)
		if len(by) != 3 {
			t.Errorf("fire %s used %d servers, want 3: %v", f.Format("15:04:05"), len(by), by)
		}
	}
	// Steady state: AVG_ALLOCATION over s1,s2,s3.
	last := checkFire(t, fires[len(fires)-1], byFire[fires[len(fires)-1]], 10)
	want := map[string][]int{"s1": {0, 1, 2, 9}, "s2": {3, 4, 5}, "s3": {6, 7, 8}}
	if fmt.Sprint(last) != fmt.Sprint(want) {
		t.Errorf("assignment %v, want %v", last, want)
	}

	// A fourth instance joins: the next fires use four servers.
	joined := time.Now()
	ins = append(ins, startInstance(t, ns, "s4", cfg, rec))
	fires = rec.waitFires(t, joined.Add(time.Second), 2, 10, 30*time.Second)
	by := checkFire(t, fires[1], rec.fires()[fires[1]], 10)
	if len(by) != 4 {
		t.Errorf("after join: %d servers ran items, want 4: %v", len(by), by)
	}

	// One leaves cleanly: the next fires use three.
	left := time.Now()
	ins[1].stop(t)
	fires = rec.waitFires(t, left.Add(time.Second), 2, 10, 30*time.Second)
	by = checkFire(t, fires[1], rec.fires()[fires[1]], 10)
	if len(by) != 3 || by["s2"] != nil {
		t.Errorf("after leave: servers %v, want s1,s3,s4", by)
	}
}
