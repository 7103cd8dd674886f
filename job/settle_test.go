package job_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// TestStartPlacesTheItemsOfJobsAboutToFire: a second instance's Start
// returns once the reshard its join asked for is made, for a job firing
// every second (its first fire after Start finds its items placed rather
// than waits for them), and not for a job firing hours from now, whose
// reshard still comes right before its fire.
func TestStartPlacesTheItemsOfJobsAboutToFire(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	soon := job.Config{Name: "soon", Cron: "* * * * * *", ShardingTotalCount: 2}
	later := job.Config{Name: "later", Cron: fmt.Sprintf("0 0 %d * * *", (time.Now().UTC().Hour()+12)%24), TimeZone: "UTC", ShardingTotalCount: 2}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(id string) {
		t.Helper()
		rc, s := connect(t, ctx, ns, id)
		for _, cfg := range []job.Config{soon, later} {
			if err := s.Add(ctx, cfg, rec.job(id)); err != nil {
				t.Fatal(err)
			}
		}
		running(t, ctx, id, rc, s)
	}
	start("s1")
	start("s2")

	// Read at once: nothing has been waited for since s2's Start returned.
	obs := observer(t, ns)
	flagged := func(name string) bool {
		t.Helper()
		ok, _, err := obs.Exists(ctx, layout.Job(name).Necessary())
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if flagged("soon") {
		t.Error("the job firing every second still waits for its reshard after s2's Start returned")
	}
	data, _, err := obs.Get(ctx, layout.Job("soon").Flag("s2", layout.Sharding))
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		t.Fatal(err)
	}
	if items, err := layout.ParseItems(string(data)); err != nil || len(items) != 1 {
		t.Errorf("s2's assignment of the job firing every second is %q after its Start, want one of the two items", data)
	}
	if !flagged("later") {
		t.Error("the job firing hours from now was resharded at s2's join, not right before its fire")
	}
}

// TestFiresDueWhileStartWaitsAreMadeUpInOneRun: the fires due while Start
// waits for its job's reshard (held here, as a loaded registry holds it)
// wait with it. Once it is written, each fire due before Start returned
// that a later fire has overtaken leaves itself to that fire, which makes
// them up in one run: the first fires after Start do not wait behind a
// backlog run one fire at a time. None is lost or run twice.
func TestFiresDueWhileStartWaitsAreMadeUpInOneRun(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var w *job.HeldWrite
	rc, s := connectVia(t, ctx, ns, "s1", func(rc regcenter.Center) regcenter.Center {
		w = job.NewHeldWrite(rc, layout.Job("backlog").Flag("s1", layout.Sharding))
		w.Armed.Store(true)
		return w
	})
	defer w.Release()
	if err := s.Add(ctx, everySecond("backlog", 1), rec.job("s1")); err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	running(t, ctx, "s1", rc, s) // returns once its wait for the reshard gives up
	returned := time.Now()
	select {
	case <-w.Held():
	default:
		t.Fatal("Start returned before its reshard was written, but the reshard was never held")
	}
	// Hold it until a fire due after Start returned is due too.
	due := returned.Truncate(time.Second).Add(time.Second)
	select {
	case <-time.After(time.Until(due.Add(200 * time.Millisecond))):
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	released := time.Now()
	w.Release()
	end := rec.waitFires(t, released, 2, 1, 30*time.Second)[1]
	recs := rec.snapshot()
	// A new job's item owes no fire due before the job was scheduled, in
	// Start: check from the second after Start began.
	checkEveryFire(t, recs, begun.Add(time.Second), end, 1)
	plain := 0
	for _, r := range recs {
		t.Logf("ran %s–%s (%s)", r.fire.Format("15:04:05.000"), r.through.Format("15:04:05.000"), r.kind)
		if r.kind == job.KindFire && !r.fire.After(released) {
			plain++
		}
	}
	if plain > 1 {
		t.Errorf("%d fires due while the reshard was held ran one by one as plain fires, want the first only, the rest made up with a later fire", plain)
	}
}
