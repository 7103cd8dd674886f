package jobhttp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/job"
)

// POST /jobs/{job}/backfill starts a backfill with an operator's token,
// GET .../backfill shows it through, cancel and resume answer; a range in
// the future, a bad body and no token are refused with nothing started.
func TestHTTPBackfill(t *testing.T) {
	const token = "s3cret"
	hc := newHTTPCluster(t, job.Config{Name: "report", Cron: "* * * * * *", ShardingTotalCount: 4}, token)
	httpWaitFor(t, "both instances firing", func() bool {
		hc.mu.Lock()
		defer hc.mu.Unlock()
		return len(hc.kinds["a1"]) > 0 && len(hc.kinds["a2"]) > 0
	})
	to := time.Now().Add(-5 * time.Second).UTC().Truncate(time.Second)
	from := to.Add(-2 * time.Second)
	body := fmt.Sprintf(`{"from": %q, "to": %q, "rate": 20}`, from.Format(time.RFC3339), to.Format(time.RFC3339))
	hc.want(401, "POST", "/jobs/report/backfill", "", body)
	hc.want(400, "POST", "/jobs/report/backfill", token, fmt.Sprintf(`{"from": %q, "to": %q}`, from.Format(time.RFC3339), time.Now().Add(time.Hour).Format(time.RFC3339)))
	hc.want(400, "POST", "/jobs/report/backfill", token, `{"from": "yesterday", "to": "2026-01-01"}`)
	hc.want(400, "POST", "/jobs/report/backfill", token, `{"since": 1}`)
	hc.want(400, "GET", "/jobs/report/backfill", "", "") // none yet
	hc.want(200, "POST", "/jobs/report/backfill", token, body)
	var st admin.BackfillStatus
	httpWaitFor(t, "the backfill through", func() bool {
		code, text := hc.do("GET", "/jobs/report/backfill", "", "")
		return code == 200 && json.Unmarshal([]byte(text), &st) == nil && st.State == admin.StateThrough
	})
	if st.Fires != 3 || st.Items != 4 || st.Done != 12 {
		t.Errorf("status %+v: want 3 fires of 4 items done", st)
	}
	hc.mu.Lock()
	n := 0
	for _, ks := range hc.kinds {
		for _, k := range ks {
			if k == job.KindBackfill {
				n++
			}
		}
	}
	hc.mu.Unlock()
	if n != 12 {
		t.Errorf("%d backfill runs, want 12", n)
	}
	if text := hc.want(200, "POST", "/jobs/report/backfill/cancel", token, ""); !strings.Contains(text, `"state": "cancelled"`) {
		t.Errorf("cancel: %s", text)
	}
	if text := hc.want(200, "POST", "/jobs/report/backfill/resume", token, ""); !strings.Contains(text, `"state": "running"`) {
		t.Errorf("resume: %s", text)
	}
}
