package jobhttp_test

import (
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/jobhttp"
)

// TestConsoleHistoryPage drives the history page against the contract of
// GET /history and GET /history/status (served here by the application's
// mux beside the handler): the rows show, the filters are sent as query
// parameters, and the cursor pages back and forth.
func TestConsoleHistoryPage(t *testing.T) {
	var mu sync.Mutex
	var queries []url.Values
	history := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Query())
		mu.Unlock()
		page := map[string]any{
			"executions": []map[string]any{
				{"id": 12, "job": "orders", "item": 3, "taskId": "orders@1", "fireTime": "2026-03-01T02:00:00Z", "kind": "fire", "server": "a2",
					"start": "2026-03-01T02:00:00.010Z", "end": "2026-03-01T02:00:01.250Z", "durationMs": 1240, "result": "failure", "error": "<b>warehouse</b> said 503"},
				{"id": 11, "job": "orders", "item": 0, "taskId": "orders@1", "fireTime": "2026-03-01T02:00:00Z", "kind": "fire", "server": "a1",
					"start": "2026-03-01T02:00:00.008Z", "end": "2026-03-01T02:00:00.308Z", "durationMs": 300, "result": "success", "error": ""},
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
	tb.waitText("#history-table", "orders", "failure", "<b>warehouse</b> said 503", "success", "1.2 s", "300 ms")
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
