package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

// A job with a retry policy exports its retries as
// shardjob_item_retries_total{job}, and each attempt as an execution.
func TestClusterMetricsCountRetries(t *testing.T) {
	ns := fmt.Sprintf("mr%d-%d", os.Getpid(), time.Now().UnixNano())
	jobs := map[string]job.Config{
		"flaky": {Name: "flaky", Cron: "* * * * * *", ShardingTotalCount: 1,
			Retry: job.RetryPolicy{Attempts: 1, Backoff: 50 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}},
	}
	run := func(string) job.Job {
		return job.SimpleFunc(func(_ context.Context, sc job.ShardingContext) error {
			if sc.Attempt == 1 {
				return errors.New("the first attempt fails")
			}
			return nil
		})
	}
	n := startNode(t, ns, "a", jobs, run)
	eventually(t, 30*time.Second, "a retry counted", []*node{n}, func(sum func(string, map[string]string) float64) bool {
		return sum("shardjob_item_retries_total", l("job", "flaky")) >= 1 &&
			sum("shardjob_executions_total", l("job", "flaky", "result", "failure")) >= 1 &&
			sum("shardjob_executions_total", l("job", "flaky", "result", "success")) >= 1
	})
}
