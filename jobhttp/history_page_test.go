package jobhttp_test

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
)

// openRecorder opens a history recorder on SQLite for the test.
func openRecorder(t *testing.T) *history.Recorder {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := history.Open(ctx, history.Config{DSN: filepath.Join(t.TempDir(), "history.db"), FlushInterval: 100 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rec.Close(cctx); err != nil {
			t.Errorf("close the recorder: %v", err)
		}
	})
	return rec
}

// TestConsoleHistoryFromRecorder: with the instances recording their
// history and the handler serving it, a trigger from the page shows up in
// the history page, filtered by job, with the outputs the runs recorded:
// a short one inline, a long one collapsed until clicked, both as text.
func TestConsoleHistoryFromRecorder(t *testing.T) {
	rec := openRecorder(t)
	long := "<b>billing</b> " + strings.Repeat("invoice sent; ", 40) + "the end"
	setup := consoleSetup{instance: func(string) []job.Option { return rec.SchedulerOptions() },
		exec: func(ctx context.Context, sc job.ShardingContext) error {
			if sc.JobName == "billing" {
				return job.RecordOutput(ctx, long)
			}
			return job.RecordOutput(ctx, map[string]any{"item": sc.Item, "note": "<i>done</i>"})
		}}
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken, History: historyhttp.New(rec)}, setup, quiet("report", 2), quiet("billing", 1))
	tb := newTab(t)
	tb.open(cc.console + "#/job/report")
	tb.setToken(consoleToken)
	tb.click("#job-trigger")
	tb.waitText("#notice", "Trigger report: done")
	cc.api().want(http.StatusOK, "POST", "/jobs/billing/trigger", consoleToken, "")
	httpWaitFor(t, "the triggered items", func() bool {
		return cc.ran("report", job.KindTrigger) == 2 && cc.ran("billing", job.KindTrigger) == 1
	})
	tb.click(`#nav a[data-view="history"]`)
	tb.waitText("#history-table", "report", "billing", `{"item":0,"note":"<i>done</i>"}`, `{"item":1,"note":"<i>done</i>"}`, "<b>billing</b> invoice sent;")
	var state struct {
		Markup  int    `json:"markup"`
		Open    bool   `json:"open"`
		Summary string `json:"summary"`
	}
	probe := `(() => { const d = document.querySelector("#history-table details.output");
		return { markup: document.querySelectorAll("#history-table i, #history-table b").length, open: d.open, summary: d.querySelector("summary").textContent }; })()`
	tb.run(evaluate(probe, &state))
	if state.Markup != 0 {
		t.Error("an output was rendered as HTML")
	}
	if state.Open || strings.Contains(state.Summary, "the end") {
		t.Errorf("the long output is not collapsed: open %v, summary %q", state.Open, state.Summary)
	}
	tb.click("#history-table details.output summary")
	tb.waitText("#history-table details.output pre", "the end")
	tb.run(evaluate(probe, &state))
	if !state.Open {
		t.Error("the long output did not open on a click")
	}
	tb.fill("#h-job", "report")
	tb.click(`#history-form button[type="submit"]`)
	tb.waitText("#history-table tbody tr:nth-child(1)", "report", "trigger", "success")
	tb.waitText("#history-table tbody tr:nth-child(2)", "report", "trigger", "success")
	if txt := tb.text("#history-table"); strings.Contains(txt, "billing") {
		t.Errorf("the job filter let billing through: %q", txt)
	}
}

// TestConsoleHistoryPage drives the history page against the contract of
// GET /history and GET /history/status (served here by the application's
// mux beside the handler): the rows show, the filters are sent as query
// parameters, and the cursor pages back and forth, also when the operator
// moves on before the page's last read has answered.
func TestConsoleHistoryPage(t *testing.T) {
	var mu sync.Mutex
	var queries []url.Values
	history := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Query())
		mu.Unlock()
		if q := r.URL.Query(); q.Get("job") == "orders" && q.Get("before") == "" {
			// The filtered first page answers late, so that the click on
			// "Older" below lands while it is in flight: its answer must
			// not stand for the older page the operator moved to.
			time.Sleep(700 * time.Millisecond)
		}
		page := map[string]any{
			"executions": []map[string]any{
				{"id": 12, "job": "orders", "item": 3, "taskId": "orders@1", "fireTime": "2026-03-01T02:00:00Z", "kind": "fire", "server": "a2",
					"start": "2026-03-01T02:00:00.010Z", "end": "2026-03-01T02:00:01.250Z", "durationMs": 1240, "result": "failure", "error": "<b>warehouse</b> said 503",
					"output": map[string]any{"shipped": 0}},
				{"id": 11, "job": "orders", "item": 0, "taskId": "orders@1", "fireTime": "2026-03-01T02:00:00Z", "kind": "fire", "server": "a1",
					"start": "2026-03-01T02:00:00.008Z", "end": "2026-03-01T02:00:00.308Z", "durationMs": 300, "result": "success", "error": "",
					"output": strings.Repeat("z", 500), "outputTruncated": true},
			},
			"next": "cursor-11",
		}
		if r.URL.Query().Get("before") == "cursor-11" {
			page = map[string]any{"executions": []map[string]any{
				{"id": 3, "job": "report", "item": 1, "taskId": "report@0", "fireTime": "2026-02-28T00:00:00Z", "kind": "failover", "server": "a1",
					"start": "2026-02-28T00:00:02Z", "end": "2026-02-28T00:00:07Z", "durationMs": 5000, "result": "timeout", "error": "deadline exceeded"},
			}, "next": ""}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = admin.WriteJSON(w, page)
	}
	status := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = admin.WriteJSON(w, map[string]any{"events": []map[string]any{
			{"id": 5, "job": "", "server": "a2", "kind": "draining", "units": 3, "detail": "drain requested", "at": "2026-03-01T01:59:00Z"},
		}, "next": ""})
	}
	setup := consoleSetup{mux: func(mux *http.ServeMux) {
		mux.HandleFunc("GET /shardjob/history", history)
		mux.HandleFunc("GET /shardjob/history/status", status)
	}}
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, setup, quiet("orders", 4))
	tb := newTab(t)
	tb.open(cc.console + "#/history")
	tb.waitText("#history-table", "orders", "failure", "<b>warehouse</b> said 503", "success", "1.2 s", "300 ms", `{"shipped":0}`, "(cut at 64 KiB)")
	tb.waitText("#history-events", "a2", "draining", "drain requested")
	var bold int
	tb.run(evaluate(`document.querySelectorAll("#history-table b").length`, &bold))
	if bold != 0 {
		t.Error("an error message was rendered as HTML")
	}

	tb.fill("#h-job", "orders")
	tb.run(evaluate(`document.getElementById("h-failed").click()`, nil))
	tb.click(`#history-form button[type="submit"]`)
	last := func() url.Values {
		mu.Lock()
		defer mu.Unlock()
		return queries[len(queries)-1]
	}
	httpWaitFor(t, "the filtered request", func() bool { q := last(); return q.Get("job") == "orders" && q.Get("failed") == "1" })
	if q := last(); q.Get("since") != "1h" || q.Get("limit") != "50" || q.Get("before") != "" || q.Has("server") || q.Has("kind") {
		t.Errorf("the filtered request's query: %v", q)
	}

	tb.click("#h-older")
	tb.waitText("#history-table", "report", "timeout", "deadline exceeded")
	if q := last(); q.Get("before") != "cursor-11" || q.Get("job") != "orders" {
		t.Errorf("the older page's query: %v", q)
	}
	tb.waitText("#history-table", "failover")
	tb.click("#h-newer")
	tb.waitText("#history-table", "orders", "success")
}
