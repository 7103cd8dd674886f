package job_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtest"
)

// alertJob is a job that blocks each run until release is closed (or its
// context ends), and counts the alerts it is told of.
type alertJob struct {
	started chan int
	release chan struct{}
	mu      sync.Mutex
	alerts  []job.Alert
}

func newAlertJob() *alertJob {
	return &alertJob{started: make(chan int, 64), release: make(chan struct{})}
}

func (a *alertJob) Execute(ctx context.Context, sc job.ShardingContext) error {
	a.started <- sc.Item
	select {
	case <-a.release:
	case <-ctx.Done():
	}
	return nil
}

func (a *alertJob) HandleAlert(_ context.Context, al job.Alert) error {
	a.mu.Lock()
	a.alerts = append(a.alerts, al)
	a.mu.Unlock()
	return nil
}

func (a *alertJob) told() []job.Alert {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]job.Alert(nil), a.alerts...)
}

func (l *eventLog) count(name string, kind job.EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.evs {
		if ev.Job == name && ev.Kind == kind {
			n++
		}
	}
	return n
}

// alertClock is a fake clock on a whole minute, so that a job firing at
// second 0 of every minute fires when the test moves it there.
func alertClock() *jobtest.Clock {
	return jobtest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
}

// TestClusterAlertLateOnce runs a fire's two items on two instances past
// the late bound (the namespace default: the job sets none): both notice,
// one raises it — one event, one call of the job's alert handler, one
// count in the stats, across the cluster — and the fire's node under
// /{job}/alerts/late says so.
func TestClusterAlertLateOnce(t *testing.T) {
	ns := namespace(t)
	clk := alertClock()
	cfg := job.Config{Name: "slow", Cron: "0 * * * * *", ShardingTotalCount: 2}
	var evs eventLog
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	jobs := map[string]*alertJob{}
	var ins []*instance
	for _, id := range []string{"s1", "s2"} {
		rc, s := connect(t, ctx, ns, id, job.WithClock(clk), job.WithEventHandler(evs.add), job.WithAlertCheck(-1),
			job.WithAlertDefault(job.AlertPolicy{Late: 10 * time.Second}))
		jobs[id] = newAlertJob()
		if err := s.Add(ctx, cfg, jobs[id]); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, running(t, ctx, id, rc, s))
	}
	defer func() {
		for _, j := range jobs {
			close(j.release)
		}
	}()
	fire := clk.Now().Add(time.Minute)
	clk.Set(fire)
	for _, id := range []string{"s1", "s2"} {
		select {
		case <-jobs[id].started:
		case <-ctx.Done():
			t.Fatalf("%s ran no item of the fire", id)
		}
	}
	clk.Advance(10 * time.Second)
	attempts := func() int64 {
		return job.LateAttemptsForTest(ins[0].sched) + job.LateAttemptsForTest(ins[1].sched)
	}
	waitUntil(t, 20*time.Second, func() bool { return attempts() >= 2 && evs.count("slow", job.EventFireLate) >= 1 })
	if n := evs.count("slow", job.EventFireLate); n != 1 {
		t.Fatalf("%d fire-late events, want 1 across the cluster", n)
	}
	ev, _ := evs.find("slow", job.EventFireLate)
	if !errors.Is(ev.Err, job.ErrFireLate) || !strings.Contains(ev.Detail, "2030-01-01T00:01:00Z") {
		t.Errorf("event = %+v, want an error wrapping ErrFireLate naming the fire", ev)
	}
	var told []job.Alert
	var late int64
	for i, id := range []string{"s1", "s2"} {
		told = append(told, jobs[id].told()...)
		for _, js := range ins[i].sched.Stats().Jobs {
			late += js.FiresLate
		}
	}
	if len(told) != 1 || told[0].Kind != job.EventFireLate || !told[0].Fire.Equal(fire) || told[0].Bound != 10*time.Second {
		t.Errorf("alert handlers told %+v, want the one late fire %v", told, fire)
	}
	if late != 1 {
		t.Errorf("FiresLate summed over instances = %d, want 1", late)
	}
	obs := observer(t, ns)
	if ok, _, err := obs.Exists(ctx, "/slow/alerts/late/"+itoa(fire.UnixMilli())); err != nil || !ok {
		t.Errorf("late fire node: exists=%v err=%v", ok, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestClusterAlertNotRunWithoutInstance registers a job with a not-run
// bound and stops its only instance before it ever runs; an instance of
// another job, the namespace's alert checker, reports it once the bound
// (and its slack) has passed on the clock, and again a bound later.
func TestClusterAlertNotRunWithoutInstance(t *testing.T) {
	ns := namespace(t)
	clk := alertClock()
	idle := job.Config{Name: "idle", Cron: "0 * * * * *", ShardingTotalCount: 1, Alert: job.AlertPolicy{NotRunFor: 2 * time.Minute}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := startInstance(t, ns, "s1", idle, newRecorder(), job.WithClock(clk), job.WithAlertCheck(-1))
	obs := observer(t, ns)
	waitUntil(t, 20*time.Second, func() bool {
		ok, _, _ := obs.Exists(ctx, "/.alerts/jobs/idle")
		return ok
	})
	first.stop(t)

	var evs eventLog
	other := job.Config{Name: "other", Cron: "0 0 * * * *", ShardingTotalCount: 1}
	startInstance(t, ns, "s2", other, newRecorder(), job.WithClock(clk), job.WithEventHandler(evs.add),
		job.WithAlertCheck(50*time.Millisecond))
	clk.Advance(2*time.Minute + 15*time.Second + time.Second) // the bound and its eighth of slack
	waitUntil(t, 20*time.Second, func() bool { return evs.count("idle", job.EventNotRun) >= 1 })
	ev, _ := evs.find("idle", job.EventNotRun)
	if !errors.Is(ev.Err, job.ErrNotRun) || !strings.Contains(ev.Detail, "never ran") || ev.Server != "s2" {
		t.Errorf("event = %+v, want ErrNotRun, never ran, raised by s2", ev)
	}
	data, _, err := obs.Get(ctx, "/.alerts/jobs/idle")
	if err != nil || !strings.Contains(string(data), `"alerted"`) {
		t.Errorf("entry %s (%v): want the report noted", data, err)
	}
	// A bound later, still not run: reported again.
	clk.Advance(2 * time.Minute)
	waitUntil(t, 20*time.Second, func() bool { return evs.count("idle", job.EventNotRun) >= 2 })
}

// TestClusterAlertLastSuccess checks the stats behind the metrics: a
// successful run sets the job's last success to its end on the clock.
func TestClusterAlertLastSuccess(t *testing.T) {
	ns := namespace(t)
	clk := alertClock()
	cfg := job.Config{Name: "ok", Cron: "0 * * * * *", ShardingTotalCount: 1, Alert: job.AlertPolicy{Late: time.Minute, NotRunFor: time.Hour}}
	rec := newRecorder()
	in := startInstance(t, ns, "s1", cfg, rec, job.WithClock(clk), job.WithAlertCheck(-1))
	fire := clk.Now().Add(time.Minute)
	clk.Set(fire)
	var st job.JobStats
	waitUntil(t, 20*time.Second, func() bool {
		for _, js := range in.sched.Stats().Jobs {
			st = js
		}
		return !st.LastSuccess.IsZero()
	})
	if !st.LastSuccess.Equal(fire) || st.FiresLate != 0 {
		t.Errorf("stats = %+v, want last success %v and no late fire", st, fire)
	}
	obs := observer(t, ns)
	waitUntil(t, 20*time.Second, func() bool {
		data, _, _ := obs.Get(context.Background(), "/.alerts/jobs/ok")
		return strings.Contains(string(data), `"success":`+itoa(fire.UnixMilli()))
	})
}

// TestConfigAlertRefused checks that bad bounds are refused naming the
// field, in Go and in YAML, and that a good one survives the stored
// document.
func TestConfigAlertRefused(t *testing.T) {
	base := job.Config{Name: "a", Cron: "0 0 * * * *", ShardingTotalCount: 1}
	for _, tc := range []struct {
		p    job.AlertPolicy
		want string
	}{
		{job.AlertPolicy{Late: -time.Second}, "alert.late -1s"},
		{job.AlertPolicy{Late: time.Millisecond}, "alert.late 1ms"},
		{job.AlertPolicy{NotRunFor: -time.Minute}, "alert.notRunFor -1m0s"},
		{job.AlertPolicy{NotRunFor: 30 * time.Minute}, "shorter than the 1h0m0s between two of the schedule's fires"},
	} {
		c := base
		c.Alert = tc.p
		err := c.Validate()
		if !errors.Is(err, job.ErrInvalidConfig) || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Validate = %v, want %q", tc.p, err, tc.want)
		}
	}
	_, err := job.DecodeConfig([]byte("name: a\ncron: '0 0 * * * *'\nshardingTotalCount: 1\nalert:\n  late: 5s\n  notRunFor: 2h\n  every: 1m\n"))
	if !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), `"every"`) {
		t.Errorf("unknown alert key: %v", err)
	}
	_, err = job.DecodeConfig([]byte("name: a\ncron: '0 0 * * * *'\nshardingTotalCount: 1\nalert: 30s\n"))
	if !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), "alert") {
		t.Errorf("alert not a mapping: %v", err)
	}
	good := base
	good.Alert = job.AlertPolicy{Late: 30 * time.Second, NotRunFor: 2 * time.Hour}
	doc, err := good.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := job.DecodeConfig(doc)
	if err != nil || back != good {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, good)
	}
	rc := observer(t, namespace(t))
	for _, o := range []job.Option{job.WithAlertDefault(job.AlertPolicy{Late: -time.Second}), job.WithAlertCheck(0)} {
		if _, err := job.NewScheduler(rc, o); !errors.Is(err, job.ErrInvalidOption) {
			t.Errorf("option accepted: %v", err)
		}
	}
}

// TestClusterAlertForgetsARemovedJob: the checker does not report a job
// whose config node is gone (removed from the cluster); it deletes its
// entry instead.
func TestClusterAlertForgetsARemovedJob(t *testing.T) {
	ns := namespace(t)
	clk := alertClock()
	gone := job.Config{Name: "gone", Cron: "0 * * * * *", ShardingTotalCount: 1, Alert: job.AlertPolicy{NotRunFor: time.Minute}}
	var evs eventLog
	startInstance(t, ns, "s1", gone, newRecorder(), job.WithClock(clk), job.WithEventHandler(evs.add),
		job.WithAlertCheck(50*time.Millisecond))
	obs := observer(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	exists := func() bool {
		ok, _, _ := obs.Exists(ctx, "/.alerts/jobs/gone")
		return ok
	}
	waitUntil(t, 20*time.Second, exists)
	if err := obs.DeleteTree(ctx, "/gone"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, func() bool { return evs.count("gone", job.EventStopped) >= 1 })
	clk.Advance(2 * time.Minute)
	waitUntil(t, 20*time.Second, func() bool { return !exists() })
	if n := evs.count("gone", job.EventNotRun); n != 0 {
		t.Errorf("%d not-run events for a removed job", n)
	}
}
