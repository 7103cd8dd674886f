package job_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/jobhook"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// fixedLoad is a sampler that reports the same load every time.
func fixedLoad(idleCPU float64) job.LoadSampler {
	return func() (job.LoadSample, error) { return job.LoadSample{IdleCPU: idleCPU, FreeMemory: 1}, nil }
}

func waitScore(t *testing.T, ins ...*instance) {
	t.Helper()
	waitUntil(t, 20*time.Second, func() bool {
		for _, in := range ins {
			if _, ok := in.sched.Score(); !ok {
				return false
			}
		}
		return true
	})
}

// IDLEST: the items a reshard has to place go one at a time to the
// instance with the most free executor slots, so a job's items split in
// proportion to the instances' free slots.
func TestPlacementIdlestFollowsFreeSlots(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := job.Config{Name: "idlest", Cron: "0 0 0 1 1 *", ShardingTotalCount: 7, ShardingStrategy: "IDLEST"}
	slots := map[string]int{"a": 1, "b": 4, "c": 2}
	var ins []*instance
	for _, id := range []string{"a", "b", "c"} {
		ins = append(ins, startJobs(t, ns, id, []job.Config{cfg}, rec, job.WithLoadScore(time.Second, slots[id], fixedLoad(1))))
	}
	waitScore(t, ins...)
	// A trigger makes the job reshard now, with every instance scored.
	obs := observer(t, ns)
	if _, err := obs.Create(tctx(t), "/idlest/servers/a/trigger", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	var units jobhook.Units
	waitUntil(t, 30*time.Second, func() bool {
		var err error
		units, err = jobhook.JobUnits(tctx(t), obs, "idlest")
		return err == nil && units.PerServer["a"]+units.PerServer["b"]+units.PerServer["c"] == 7
	})
	for id, n := range slots {
		if units.PerServer[id] != n {
			t.Fatalf("items per instance %v, want the free slots %v", units.PerServer, slots)
		}
	}
}

// Preemption: a crashed instance's item waits in the failover queue, and
// the idlest candidate, waiting least, takes it.
func TestPreemptionIsWonByTheIdlest(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	var dItem atomic.Int64
	dItem.Store(-1)
	rec.holdFor = func(sc job.ShardingContext) time.Duration {
		if sc.Kind == job.KindFire {
			if sc.ServerID == "d" {
				dItem.CompareAndSwap(-1, int64(sc.Item))
			}
			return 3 * time.Second
		}
		return 0
	}
	cfg := job.Config{Name: "ft", Cron: "*/10 * * * * *", ShardingTotalCount: 4, Failover: true}
	idle := map[string]float64{"a": 0.9, "b": 0.2, "c": 0}
	var ins []*instance
	for _, id := range []string{"a", "b", "c"} {
		ins = append(ins, startJobs(t, ns, id, []job.Config{cfg}, rec, job.WithLoadScore(time.Second, 1, fixedLoad(idle[id]))))
	}
	waitScore(t, ins...)
	d := startJobs(t, ns, "d", []job.Config{cfg}, rec)
	// Wait until d runs an item (not only claims it), then crash it
	// mid-run.
	waitUntil(t, 30*time.Second, func() bool { return dItem.Load() >= 0 })
	d.crash(t)
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if r.kind == job.KindFailover && int64(r.item) == dItem.Load() {
				return true
			}
		}
		return false
	})
	for _, r := range rec.snapshot() {
		if r.kind == job.KindFailover && int64(r.item) == dItem.Load() && r.server != "a" {
			t.Fatalf("the failover run of item %d ran on %s, want a (the idlest)", r.item, r.server)
		}
	}
}

// Health beyond the session: three failed checks in a row mark the
// instance offline and move its units away (nothing runs twice); one good
// check brings it back.
func TestHealthCheckMarksOfflineAfterThreeFailures(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfgs, names := everySecondJobs(4, 1)
	var failing atomic.Bool
	var goodAfterFailing, failedChecks atomic.Int64
	events := make(chan job.Event, 64)
	check := func(context.Context) error {
		if failing.Load() {
			failedChecks.Add(1)
			return errors.New("the database is gone")
		}
		if failedChecks.Load() > 0 {
			goodAfterFailing.Add(1)
		}
		return nil
	}
	// The handler runs on the health loop between two checks: what it
	// reads of the counters is exact.
	var failedAtOffline, checksAtOnline atomic.Int64
	handler := job.WithEventHandler(func(ev job.Event) {
		switch ev.Kind {
		case job.EventOffline:
			failedAtOffline.Store(failedChecks.Load())
		case job.EventOnline:
			checksAtOnline.Store(goodAfterFailing.Load())
		}
		select {
		case events <- ev:
		default:
		}
	})
	s1 := startJobs(t, ns, "s1", cfgs, rec, job.WithHealthCheck(200*time.Millisecond, check), handler)
	startJobs(t, ns, "s2", cfgs, rec)
	first, _ := settleItems(t, rec, time.Now(), names, 1, []string{"s1", "s2"}, 30*time.Second)

	failing.Store(true)
	ev := waitEvent(t, events, job.EventOffline, 10*time.Second)
	if n := failedAtOffline.Load(); n != job.HealthFailures {
		t.Fatalf("offline after %d failed checks, want exactly %d", n, job.HealthFailures)
	}
	if ev.Err == nil {
		t.Fatal("offline event without the check's error")
	}
	waitUntil(t, 30*time.Second, func() bool { return s1.sched.Placement().Units == 0 })
	settleItems(t, rec, time.Now(), names, 1, []string{"s2"}, 30*time.Second)

	failing.Store(false)
	waitEvent(t, events, job.EventOnline, 10*time.Second)
	if n := checksAtOnline.Load(); n != 1 {
		t.Fatalf("online after %d good checks, want one", n)
	}
	last, _ := settleItems(t, rec, time.Now(), names, 1, []string{"s1", "s2"}, 30*time.Second)
	checkItemTicks(t, rec, names, 1, first, last, "")
}

// Mutual health checks: instances probe each other's health endpoint; a
// peer failing HealthFailures probes in a row is marked offline and its
// units move to the others; one good probe brings it back.
func TestPeerProbesMarkAFailingPeerOffline(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfgs, names := everySecondJobs(4, 1)
	var sick atomic.Bool
	endpoint := func(failing *atomic.Bool) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if failing != nil && failing.Load() {
				http.Error(w, "database gone", http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/healthz"
	}
	events := make(chan job.Event, 64)
	probe := job.WithPeerProbe(200*time.Millisecond, nil)
	startJobs(t, ns, "s1", cfgs, rec, job.WithHealthEndpoint(endpoint(nil)), probe, eventsTo(events))
	s2 := startJobs(t, ns, "s2", cfgs, rec, job.WithHealthEndpoint(endpoint(&sick)), probe)
	first, _ := settleItems(t, rec, time.Now(), names, 1, []string{"s1", "s2"}, 30*time.Second)

	sick.Store(true)
	ev := waitEvent(t, events, job.EventPeerOffline, 20*time.Second)
	if ev.Peer != "s2" || ev.Err == nil {
		t.Fatalf("peer-offline event %+v", ev)
	}
	obs := observer(t, ns)
	if ok, _, err := obs.Exists(tctx(t), "/.placement/offline/s2"); err != nil || !ok {
		t.Fatalf("s2 not marked offline: %v %v", ok, err)
	}
	waitUntil(t, 30*time.Second, func() bool { return s2.sched.Placement().Units == 0 })
	settleItems(t, rec, time.Now(), names, 1, []string{"s1"}, 30*time.Second)

	sick.Store(false)
	ev = waitEvent(t, events, job.EventPeerOnline, 20*time.Second)
	if ev.Peer != "s2" {
		t.Fatalf("peer-online event %+v", ev)
	}
	if data, _, err := obs.Get(tctx(t), "/.placement/probes/s2"); err != nil || string(data) != "0" {
		t.Fatalf("s2's probe counter after a good probe: %q %v", data, err)
	}
	last, _ := settleItems(t, rec, time.Now(), names, 1, []string{"s1", "s2"}, 30*time.Second)
	checkItemTicks(t, rec, names, 1, first, last, "")
}

func TestHealthOptionsRefuseBadInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := regcenter.Open(ctx, onRegistry(regcenter.Config{Namespace: namespace(t)}))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	for name, opt := range map[string]job.Option{
		"endpoint not http":     job.WithHealthEndpoint("ftp://x/y"),
		"endpoint without host": job.WithHealthEndpoint("http:///healthz"),
		"probe too often":       job.WithPeerProbe(time.Millisecond, nil),
		"check too often":       job.WithHealthCheck(time.Millisecond, func(context.Context) error { return nil }),
		"nil check":             job.WithHealthCheck(time.Second, nil),
		"no slots":              job.WithLoadScore(time.Second, 0, nil),
		"score too often":       job.WithLoadScore(time.Millisecond, 1, nil),
		"fault tolerance 0":     job.WithFaultTolerance(0),
		"negative alarm":        job.WithAlarmThreshold(-1),
		"nil event handler":     job.WithEventHandler(nil),
	} {
		if _, err := job.NewScheduler(rc, opt); !errors.Is(err, job.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
}
