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
