package main

import (
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

// shardjob backfill starts a backfill of a past range, shows its progress
// until every item is through (each fire once on each item, as a backfill
// run), and refuses a range in the future, a bad time and a missing mode
// with a usage error.
func TestCLIBackfill(t *testing.T) {
	t.Parallel()
	c := newCluster(t, job.Config{Name: "report", Cron: "* * * * * *", ShardingTotalCount: 6}, "")
	c.warmUp()
	to := time.Now().Add(-5 * time.Second).Truncate(time.Second)
	from := to.Add(-4 * time.Second)
	out := c.mustCLI("backfill", "report", "--from", from.UTC().Format(time.RFC3339), "--to", to.UTC().Format(time.RFC3339), "--rate", "20")
	if !strings.Contains(out, "backfill ") || !strings.Contains(out, "of report started") {
		t.Errorf("backfill output:\n%s", out)
	}
	waitFor(t, 60*time.Second, "the backfill through", func() bool {
		return strings.Contains(c.mustCLI("backfill", "report", "--status"), ": through; 30 of 30 runs done (5 fires × 6 items), 6 items through")
	})
	count := map[string]int{}
	for _, e := range c.rec.matching(func(e execRec) bool { return e.kind == job.KindBackfill }) {
		count[e.fire.Format(time.TimeOnly)+"/"+string(rune('0'+e.item))]++
	}
	if len(count) != 30 {
		t.Errorf("%d item fires ran as backfill runs, want 30: %v", len(count), count)
	}
	for k, n := range count {
		if n != 1 {
			t.Errorf("%s ran %d times", k, n)
		}
	}
	c.wantFail(exitUsage, []string{"is after now"}, "backfill", "report", "--from", from.Format(time.RFC3339), "--to", time.Now().Add(time.Hour).Format(time.RFC3339))
	c.wantFail(exitUsage, []string{`--from "yesterday" is not a time`}, "backfill", "report", "--from", "yesterday", "--to", to.Format(time.RFC3339))
	c.wantFail(exitUsage, []string{"give --from and --to"}, "backfill", "report")
	c.wantFail(exitUnknown, []string{`unknown job "nope"`}, "backfill", "nope", "--status")
}
