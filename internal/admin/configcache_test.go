package admin_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// TestJobsPollCostsALookup: GET /jobs (which the console polls every
// second) decodes a job's config node and searches its next fire once per
// document, not once per request: 50 yearly jobs with rare calendars cost
// the second poll no decode and no schedule search.
func TestJobsPollCostsALookup(t *testing.T) {
	f := newFixture(t)
	var decodes, searches atomic.Int64
	counting := func(ctx context.Context, data []byte) (admin.Config, error) {
		decodes.Add(1)
		cfg, err := codec(ctx, data)
		if next := cfg.NextFire; next != nil {
			cfg.NextFire = func(t time.Time) (time.Time, error) { searches.Add(1); return next(t) }
		}
		if next := cfg.Next; next != nil {
			cfg.Next = func(t time.Time) time.Time { searches.Add(1); return next(t) }
		}
		return cfg, err
	}
	adm := admin.New(f.rc, counting)
	const jobs = 50
	for i := range jobs {
		name := fmt.Sprintf("yearly%02d", i)
		f.create(layout.Job(name).Config(), fmt.Sprintf("name: %s\ncron: '0 0 0 1 1 *'\nshardingTotalCount: 1\nexclude: sat,sun,mon,tue,wed,thu\n", name), regcenter.Persistent)
	}
	poll := func() {
		t.Helper()
		got, err := adm.Jobs(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != jobs || got[0].NextFire == nil {
			t.Fatalf("%d jobs, first %+v", len(got), got[0])
		}
	}
	poll()
	if d, s := decodes.Load(), searches.Load(); d != jobs || s != jobs {
		t.Fatalf("first poll: %d decodes, %d searches; want %d each", d, s, jobs)
	}
	decodes.Store(0)
	searches.Store(0)
	poll()
	if d, s := decodes.Load(), searches.Load(); d != 0 || s != 0 {
		t.Fatalf("second poll: %d decodes, %d searches; want none", d, s)
	}
	// A changed document is decoded again.
	if _, err := f.rc.Set(f.ctx, layout.Job("yearly01").Config(), []byte("name: yearly01\ncron: '0 0 0 1 1 *'\nshardingTotalCount: 2\n"), -1); err != nil {
		t.Fatal(err)
	}
	poll()
	if d := decodes.Load(); d != 1 {
		t.Fatalf("after one config changed: %d decodes, want 1", d)
	}
}

// TestJobsShowAnEndedSchedule: a job whose end has passed shows status
// "ended" and says there are no further fires, instead of "resharding"
// for ever (the reshard waits for a fire that never comes).
func TestJobsShowAnEndedSchedule(t *testing.T) {
	f := newFixture(t)
	p := layout.Job("over")
	f.create(p.Config(), "name: over\ncron: '0 0 3 * * *'\nshardingTotalCount: 2\nend: 2020-01-01T00:00:00Z\n", regcenter.Persistent)
	f.create(p.Flag("s1", layout.Status), layout.StatusReady, regcenter.Ephemeral)
	f.create(p.Necessary(), "", regcenter.Persistent)
	jobs, err := f.adm.Jobs(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Status != admin.StatusEnded || jobs[0].NextFire != nil || jobs[0].NextFireNote != "no further fires" {
		t.Fatalf("jobs: %+v; want status %q, no next fire, note %q", jobs, admin.StatusEnded, "no further fires")
	}
	st, err := f.adm.Status(f.ctx, "over")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != admin.StatusEnded {
		t.Fatalf("status: %q, want %q", st.Status, admin.StatusEnded)
	}
}
