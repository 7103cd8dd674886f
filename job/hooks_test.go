package job_test

import (
	"errors"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/jobhook"
	"github.com/shardjob/shardjob/job"
)

// The hooks job types stand on, against a real registry: a misfire owed
// through OweMisfire is paid with one make-up run for the fire it names,
// and Pause sets this server's paused flag. Misuse is refused by name.
func TestHooksOweAMisfireAndPause(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := job.Config{Name: "hooked", Cron: "* * * * * *", ShardingTotalCount: 2}
	in := startInstance(t, ns, "s1", cfg, rec)
	ctx := tctx(t)

	since := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := jobhook.OweMisfire(in.sched, ctx, "hooked", 1, since); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range byKind(rec.snapshot(), job.KindMisfire) {
			if r.item == 1 && r.fire.Equal(since) {
				return true
			}
		}
		return false
	})
	if err := jobhook.OweMisfire(in.sched, ctx, "nope", 0, since); !errors.Is(err, job.ErrUnknownJob) {
		t.Errorf("owing a job not added: %v, want ErrUnknownJob", err)
	}
	if err := jobhook.OweMisfire(in.sched, ctx, "hooked", 2, since); !errors.Is(err, job.ErrInvalidConfig) {
		t.Errorf("owing item 2 of 2: %v, want ErrInvalidConfig", err)
	}
	if err := jobhook.OweMisfire(struct{}{}, ctx, "hooked", 0, since); !errors.Is(err, job.ErrInvalidOption) {
		t.Errorf("owing through a non-scheduler: %v, want ErrInvalidOption", err)
	}

	obs := observer(t, ns)
	for range 2 { // pausing a paused job is not an error
		if err := jobhook.Pause(in.sched, ctx, "hooked"); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _, err := obs.Exists(ctx, "/hooked/servers/s1/paused"); err != nil || !ok {
		t.Fatalf("paused flag present %v, err %v", ok, err)
	}
	if err := jobhook.Pause(in.sched, ctx, "nope"); !errors.Is(err, job.ErrUnknownJob) {
		t.Errorf("pausing a job not added: %v, want ErrUnknownJob", err)
	}
	var nilSched *job.Scheduler
	if err := jobhook.Pause(nilSched, ctx, "hooked"); !errors.Is(err, job.ErrInvalidOption) {
		t.Errorf("pausing through a nil scheduler: %v, want ErrInvalidOption", err)
	}
}
