package metrics_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtest"
)

// TestClusterAlertMetrics runs two jobs on a fake clock: one whose fire
// outlives its late bound, one that succeeds. shardjob_fire_late_total
// counts the late fire once; shardjob_job_last_success_timestamp_seconds
// says when the successful run ended, on the scheduler's clock, and is
// absent for the job that never succeeded.
func TestClusterAlertMetrics(t *testing.T) {
	clk := jobtest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	release := make(chan struct{})
	defer close(release)
	jobs := map[string]job.Config{
		"slow": {Name: "slow", Cron: "0 * * * * *", ShardingTotalCount: 1, Alert: job.AlertPolicy{Late: 5 * time.Second}},
		"fast": {Name: "fast", Cron: "0 * * * * *", ShardingTotalCount: 1, Alert: job.AlertPolicy{Late: 5 * time.Second}},
	}
	run := func(string) job.Job {
		return job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
			if sc.JobName == "slow" {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		})
	}
	ns := fmt.Sprintf("ma%d-%d", os.Getpid(), time.Now().UnixNano())
	n := startNode(t, ns, "m1", jobs, run, job.WithClock(clk), job.WithAlertCheck(-1))
	fire := clk.Now().Add(time.Minute)
	clk.Set(fire)
	eventually(t, 30*time.Second, "fast's success", []*node{n}, func(sum func(string, map[string]string) float64) bool {
		return sum("shardjob_job_last_success_timestamp_seconds", l("job", "fast")) == float64(fire.Unix())
	})
	clk.Advance(6 * time.Second)
	eventually(t, 30*time.Second, "slow's late fire", []*node{n}, func(sum func(string, map[string]string) float64) bool {
		return sum("shardjob_fire_late_total", l("job", "slow")) == 1
	})
	fams := n.scrape(t)
	if v := value(fams, "shardjob_fire_late_total", l("job", "fast")); v != 0 {
		t.Errorf("fast's late fires = %v, want 0", v)
	}
	for _, m := range fams["shardjob_job_last_success_timestamp_seconds"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "job" && lp.GetValue() == "slow" {
				t.Errorf("slow, which never succeeded, has a last success: %v", m)
			}
		}
	}
}
