package jobhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// historyServer serves a handler with (or without) a recorder holding 30
// executions of jobs a and b on s1 and s2, every third one failed, and 30
// events; base is the first execution's fire time. Its reads see the runs'
// output and errors without a token (Options.OpenOutput).
func historyServer(t *testing.T, withHistory bool) (*httptest.Server, time.Time) {
	t.Helper()
	return historyServerWith(t, withHistory, jobhttp.Options{OpenOutput: true})
}

// historyServerWith is historyServer with opts (its Logger and History
// set here). The failed executions recorded an output, {"row": i}.
func historyServerWith(t *testing.T, withHistory bool, opts jobhttp.Options) (*httptest.Server, time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: fmt.Sprintf("hist%d", httpNS.Add(1))},
		regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	opts.Logger = testLogger(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	if withHistory {
		rec, err := history.Open(ctx, history.Config{DSN: filepath.Join(t.TempDir(), "h.db"), Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := rec.Close(ctx); err != nil {
				t.Error(err)
			}
		})
		for i := range 30 {
			fire := base.Add(time.Duration(i) * time.Minute)
			var err error
			var out json.RawMessage
			if i%3 == 0 {
				err = fmt.Errorf("row %d: %w", i, errors.ErrUnsupported)
				out = json.RawMessage(fmt.Sprintf(`{"row": %d}`, i))
			}
			rec.AfterExecution(listener.Execution{Job: []string{"a", "b"}[i%2], TaskID: fmt.Sprint("t", i), ServerID: []string{"s1", "s2"}[i%2],
				Item: i, Kind: "fire", FireTime: fire, Begin: fire, End: fire.Add(1500 * time.Microsecond), Err: err, Output: out})
			rec.HandleEvent(job.Event{Kind: job.EventResharded, Job: []string{"a", "b"}[i%2], Server: "s1", Units: i, Detail: "0-2", At: fire})
		}
		if err := rec.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		opts.History = historyhttp.New(rec)
	}
	srv := httptest.NewServer(jobhttp.NewHandler(rc, opts))
	t.Cleanup(srv.Close)
	return srv, base
}

func getJSON(t *testing.T, srv *httptest.Server, path string, v any) int {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: content type %q", path, ct)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return resp.StatusCode
}

type execJSON struct {
	ID         int64   `json:"id"`
	Job        string  `json:"job"`
	Item       int     `json:"item"`
	TaskID     string  `json:"taskId"`
	FireTime   string  `json:"fireTime"`
	Kind       string  `json:"kind"`
	Server     string  `json:"server"`
	Start      string  `json:"start"`
	End        string  `json:"end"`
	DurationMs float64 `json:"durationMs"`
	Result     string  `json:"result"`
	Error      string  `json:"error"`
}

type execPage struct {
	Executions []execJSON `json:"executions"`
	Next       string     `json:"next"`
}

// TestHistoryEndpoints reads the history through GET /history and GET
// /history/status: the JSON shapes, paging, every filter, and the 400s.
func TestHistoryEndpoints(t *testing.T) {
	srv, base := historyServer(t, true)
	var p execPage
	if code := getJSON(t, srv, "/history?limit=4", &p); code != http.StatusOK || len(p.Executions) != 4 || p.Next == "" {
		t.Fatalf("first page: %d %+v", code, p)
	}
	e := p.Executions[0]
	fire := base.Add(29 * time.Minute).UTC()
	if e.Item != 29 || e.Job != "b" || e.Server != "s2" || e.TaskID != "t29" || e.Kind != "fire" || e.FireTime != fire.Format(time.RFC3339Nano) ||
		e.Start != fire.Format(time.RFC3339Nano) || e.End != fire.Add(1500*time.Microsecond).Format(time.RFC3339Nano) || e.DurationMs != 1.5 ||
		e.Result != "success" || e.Error != "" || e.ID <= 0 {
		t.Errorf("newest execution: %+v", e)
	}
	// Page through everything.
	seen := 0
	next := ""
	for range 10 {
		var p execPage
		q := "/history?limit=7"
		if next != "" {
			q += "&before=" + next
		}
		if code := getJSON(t, srv, q, &p); code != http.StatusOK {
			t.Fatalf("%s: %d", q, code)
		}
		for _, e := range p.Executions {
			if e.Item != 29-seen {
				t.Fatalf("paging: item %d at position %d", e.Item, seen)
			}
			seen++
		}
		if next = p.Next; next == "" {
			break
		}
	}
	if seen != 30 {
		t.Errorf("paged %d executions, want 30", seen)
	}
	for q, want := range map[string]int{
		"/history":                        30,
		"/history?job=a":                  15,
		"/history?server=s2&job=b":        15,
		"/history?server=s2&job=a":        0,
		"/history?failed=1":               10,
		"/history?failed=true&job=a":      5,
		"/history?failed=0":               30,
		"/history?kind=fire":              30,
		"/history?kind=trigger":           0,
		"/history?since=" + rfc(base, 20): 10,
		"/history?until=" + rfc(base, 20): 20,
		"/history?since=" + rfc(base, 5) + "&until=" + rfc(base, 10): 5,
	} {
		var p execPage
		if code := getJSON(t, srv, q, &p); code != http.StatusOK || len(p.Executions) != want {
			t.Errorf("%s: %d, %d executions, want %d", q, code, len(p.Executions), want)
		}
	}
	// A duration is before the server's now: base is an hour ago, the
	// newest fire 31 minutes ago.
	var rel execPage
	if code := getJSON(t, srv, "/history?since=2h", &rel); code != http.StatusOK || len(rel.Executions) != 30 {
		t.Errorf("since=2h: %d, %d executions", code, len(rel.Executions))
	}
	if code := getJSON(t, srv, "/history?since=10m", &rel); code != http.StatusOK || len(rel.Executions) != 0 {
		t.Errorf("since=10m: %d, %d executions", code, len(rel.Executions))
	}
	var failed execPage
	getJSON(t, srv, "/history?failed=1&limit=1", &failed)
	if len(failed.Executions) != 1 || failed.Executions[0].Result != "failure" || failed.Executions[0].Error != "row 27: unsupported operation" {
		t.Errorf("failed: %+v", failed)
	}

	var ev struct {
		Events []struct {
			ID     int64  `json:"id"`
			Job    string `json:"job"`
			Server string `json:"server"`
			Kind   string `json:"kind"`
			Units  int    `json:"units"`
			Detail string `json:"detail"`
			At     string `json:"at"`
		} `json:"events"`
		Next string `json:"next"`
	}
	if code := getJSON(t, srv, "/history/status?job=a&limit=10", &ev); code != http.StatusOK || len(ev.Events) != 10 || ev.Next == "" {
		t.Fatalf("events: %d %+v", code, ev)
	}
	if e := ev.Events[0]; e.Job != "a" || e.Server != "s1" || e.Kind != "resharded" || e.Units != 28 || e.Detail != "0-2" ||
		e.At != base.Add(28*time.Minute).UTC().Format(time.RFC3339Nano) || e.ID <= 0 {
		t.Errorf("newest event of a: %+v", e)
	}
	next = ev.Next
	if code := getJSON(t, srv, "/history/status?job=a&limit=10&before="+next, &ev); code != http.StatusOK || len(ev.Events) != 5 || ev.Next != "" {
		t.Errorf("events, second page: %d %d next %q", code, len(ev.Events), ev.Next)
	}

	for _, c := range []struct{ q, param string }{
		{"limit=0", "limit"},
		{"limit=1001", "limit"},
		{"limit=ten", "limit"},
		{"failed=yes", "failed"},
		{"since=yesterday", "since"},
		{"since=-1h", "since"},
		{"until=2026-13-01", "until"},
		{"before=abc", "before"},
		{"before=0", "before"},
		{"since=1h&until=2h", "since"},
	} {
		for _, path := range []string{"/history", "/history/status"} {
			var e struct {
				Error string `json:"error"`
			}
			if code := getJSON(t, srv, path+"?"+c.q, &e); code != http.StatusBadRequest || !strings.Contains(e.Error, c.param+"=") {
				t.Errorf("%s?%s: %d %q, want 400 naming %s", path, c.q, code, e.Error, c.param)
			}
		}
	}
}

// TestHistoryOutputNeedsTheToken: GET /history serves a run's output and
// error text (which may quote what an HTTP job's target answered) only to
// a request with the token, unless Options.OpenOutput; the rest of each
// execution, and GET /history/status, stay open to every reader.
func TestHistoryOutputNeedsTheToken(t *testing.T) {
	type row struct {
		Result       string          `json:"result"`
		Error        string          `json:"error"`
		Output       json.RawMessage `json:"output"`
		OutputHidden bool            `json:"outputHidden"`
		ErrorHidden  bool            `json:"errorHidden"`
	}
	read := func(srv *httptest.Server, token string) (int, []row) {
		t.Helper()
		req, err := http.NewRequest("GET", srv.URL+"/history?failed=1&limit=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p struct {
			Executions []row `json:"executions"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, p.Executions
	}
	shown := func(rs []row) bool {
		var out bytes.Buffer
		if len(rs) != 1 || json.Compact(&out, rs[0].Output) != nil {
			return false
		}
		return rs[0].Error == "row 27: unsupported operation" && out.String() == `{"row":27}` &&
			!rs[0].OutputHidden && !rs[0].ErrorHidden
	}
	srv, _ := historyServerWith(t, true, jobhttp.Options{Token: "s3cret"})
	for _, token := range []string{"", "wrong"} {
		code, rs := read(srv, token)
		if code != http.StatusOK || len(rs) != 1 || rs[0].Result != "failure" || rs[0].Error != "" || rs[0].Output != nil ||
			!rs[0].OutputHidden || !rs[0].ErrorHidden {
			t.Errorf("token %q: %d %+v; want the failed run without its output and error, flagged hidden", token, code, rs)
		}
	}
	if code, rs := read(srv, "s3cret"); code != http.StatusOK || !shown(rs) {
		t.Errorf("with the token: %d %+v", code, rs)
	}
	var ev struct {
		Events []json.RawMessage `json:"events"`
	}
	if code := getJSON(t, srv, "/history/status?limit=3", &ev); code != http.StatusOK || len(ev.Events) != 3 {
		t.Errorf("GET /history/status without the token: %d, %d events", code, len(ev.Events))
	}
	// A handler without a token hides them from everyone, unless told not to.
	readOnly, _ := historyServerWith(t, true, jobhttp.Options{})
	if code, rs := read(readOnly, ""); code != http.StatusOK || len(rs) != 1 || rs[0].Output != nil || !rs[0].OutputHidden {
		t.Errorf("read-only handler: %d %+v", code, rs)
	}
	open, _ := historyServerWith(t, true, jobhttp.Options{Token: "s3cret", OpenOutput: true})
	if code, rs := read(open, ""); code != http.StatusOK || !shown(rs) {
		t.Errorf("OpenOutput, no token: %d %+v", code, rs)
	}
}

func rfc(base time.Time, minutes int) string {
	return url.QueryEscape(base.Add(time.Duration(minutes) * time.Minute).Format(time.RFC3339))
}

// TestHistoryNotConfigured: without Options.History both endpoints answer
// 404 with a JSON error that says so.
func TestHistoryNotConfigured(t *testing.T) {
	srv, _ := historyServer(t, false)
	for _, path := range []string{"/history", "/history/status?job=a"} {
		var e struct {
			Error string `json:"error"`
		}
		if code := getJSON(t, srv, path, &e); code != http.StatusNotFound || !strings.Contains(e.Error, "history is not configured") {
			t.Errorf("%s: %d %q", path, code, e.Error)
		}
	}
}
