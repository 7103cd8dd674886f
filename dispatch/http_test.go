package dispatch

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
)

const testToken = "0123456789abcdef-token"

type restClient struct {
	t    *testing.T
	base string
}

// do sends a request and returns the status and the decoded JSON body.
func (c restClient) do(method, path, body string, token bool) (int, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(testCtx(c.t), method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if token {
		req.Header.Set("Authorization", "Bearer "+testToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		c.t.Fatalf("%s %s: answer is not JSON: %q", method, path, raw)
	}
	return resp.StatusCode, out
}

func TestREST(t *testing.T) {
	ctx := testCtx(t)
	notices := make(chan WebhookEvent, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		if err := Verify("hook-secret-0123456789", r.Header.Get(SignatureHeader), body, time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var ev WebhookEvent
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		notices <- ev
	}))
	defer hook.Close()

	wh := &Webhooks{Delay: time.Millisecond, Logger: testlog.Logger(t)}
	d := open(t, Config{DSN: filepath.Join(t.TempDir(), "d.db"), OnStart: wh.Start, OnFail: wh.Fail, OnTimeout: wh.Timeout,
		AllowInsecureWebhooks: true, AllowPrivateWebhooks: true, Logger: testlog.Logger(t)})
	wh.Workers = d
	h, err := NewHandler(d, HandlerConfig{Token: testToken, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := restClient{t, srv.URL}

	check := func(what string, code, want int, body map[string]any) {
		t.Helper()
		if code != want {
			t.Errorf("%s: status %d, want %d (body %v)", what, code, want, body)
		} else if want >= 400 && body["error"] == "" {
			t.Errorf("%s: no error message", what)
		}
	}
	code, body := c.do("PUT", "/v1/global", `{"max_running": 5}`, true)
	check("put global", code, 200, body)
	code, body = c.do("PUT", "/v1/workers/acme", `{"max_running": 2, "webhook_url": "`+hook.URL+`", "webhook_secret": "hook-secret-0123456789"}`, true)
	check("put worker", code, 200, body)
	before := snapshot(t, d)

	now := time.Now().UTC()
	start, end := now.Add(-time.Second).Format(time.RFC3339Nano), now.Add(time.Hour).Format(time.RFC3339Nano)
	bad := []struct {
		what, method, path, body string
		token                    bool
		want                     int
	}{
		{"no token", "PUT", "/v1/global", `{"max_running": 1}`, false, 401},
		{"garbage JSON", "POST", "/v1/assign", `{"worker": `, true, 400},
		{"unknown field", "PUT", "/v1/global", `{"max": 1}`, true, 400},
		{"trailing data", "PUT", "/v1/global", `{"max_running": 1} {}`, true, 400},
		{"negative global cap", "PUT", "/v1/global", `{"max_running": -1}`, true, 400},
		{"negative worker cap", "PUT", "/v1/workers/acme", `{"max_running": -1}`, true, 400},
		{"end before start", "POST", "/v1/assign", `{"worker": "acme", "start": "` + end + `", "end": "` + start + `", "tasks": [{"external_id": "x"}]}`, true, 400},
		{"empty batch", "POST", "/v1/assign", `{"worker": "acme", "start": "` + start + `", "end": "` + end + `", "tasks": []}`, true, 400},
		{"bad timeout", "POST", "/v1/assign", `{"worker": "acme", "start": "` + start + `", "end": "` + end + `", "timeout": "soon", "tasks": [{"external_id": "x"}]}`, true, 400},
		{"unknown worker", "POST", "/v1/assign", `{"worker": "nobody", "start": "` + start + `", "end": "` + end + `", "tasks": [{"external_id": "x"}]}`, true, 404},
		{"unknown task", "POST", "/v1/tasks/nope/finish", ``, true, 404},
		{"unknown task cancel", "POST", "/v1/tasks/nope/cancel", ``, true, 404},
		{"unknown task get", "GET", "/v1/tasks/nope", ``, true, 404},
		{"bad status filter", "GET", "/v1/tasks?status=sleeping", ``, true, 400},
		{"unknown filter", "GET", "/v1/tasks?colour=red", ``, true, 400},
		{"bad limit", "GET", "/v1/tasks?limit=lots", ``, true, 400},
	}
	for _, b := range bad {
		code, body := c.do(b.method, b.path, b.body, b.token)
		check(b.what, code, b.want, body)
	}
	if after := snapshot(t, d); after != before {
		t.Errorf("rejected calls changed the store:\nbefore %s\nafter  %s", before, after)
	}

	code, body = c.do("POST", "/v1/assign", `{"worker": "acme", "start": "`+start+`", "end": "`+end+`", "timeout": "1h", "tasks": [{"external_id": "r1", "info": "report 1"}]}`, true)
	check("assign", code, 200, body)
	uuid := body["tasks"].([]any)[0].(map[string]any)["uuid"].(string)
	code, body = c.do("POST", "/v1/assign", `{"worker": "acme", "start": "`+start+`", "end": "`+end+`", "tasks": [{"external_id": "r1"}]}`, true)
	check("assign again", code, 200, body)
	if again := body["tasks"].([]any)[0].(map[string]any)["uuid"]; again != uuid {
		t.Errorf("assigning r1 again gave %v, want %s", again, uuid)
	}

	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ev := recv(t, notices, "start notice")
	if ev.Event != "start" || ev.Task.UUID != uuid || ev.Task.Info != "report 1" || ev.Task.Attempt != 1 {
		t.Errorf("notice %+v", ev)
	}
	waitStatus(t, d, uuid, StatusRunning)
	code, body = c.do("POST", "/v1/tasks/"+uuid+"/finish", `{"attempt": 7}`, true)
	check("finish a stale attempt", code, 409, body)
	code, body = c.do("POST", "/v1/tasks/"+uuid+"/finish", `{"attempt": 1}`, true)
	check("finish", code, 200, body)
	if body["status"] != "finished" {
		t.Errorf("finished task shows %v", body["status"])
	}
	code, body = c.do("POST", "/v1/tasks/"+uuid+"/finish", `{"attempt": 1}`, true)
	check("the same attempt's finish again", code, 200, body)
	code, body = c.do("POST", "/v1/tasks/"+uuid+"/finish", ``, true)
	check("finish twice naming no attempt", code, 409, body)
	code, body = c.do("POST", "/v1/tasks/"+uuid+"/cancel", ``, true)
	check("cancel a finished task", code, 409, body)

	code, body = c.do("GET", "/v1/tasks?worker=acme&status=finished", ``, true)
	check("list", code, 200, body)
	if n := len(body["tasks"].([]any)); n != 1 {
		t.Errorf("list shows %d finished tasks, want 1", n)
	}
	code, body = c.do("GET", "/v1/workers", ``, true)
	check("workers", code, 200, body)
	code, body = c.do("GET", "/v1/global", ``, true)
	check("global", code, 200, body)
	if body["max_running"] != 5.0 || body["running"] != 0.0 {
		t.Errorf("global %v", body)
	}
}

// A start notice the webhook refuses fails the attempt; with no retries
// left the task fails and the fail notice goes out.
func TestWebhookRefusedFailsTheAttempt(t *testing.T) {
	ctx := testCtx(t)
	events := make(chan string, 20)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev WebhookEvent
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		events <- ev.Event
		if ev.Event == "start" {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	}))
	defer hook.Close()
	wh := &Webhooks{Delay: time.Millisecond, Attempts: 2, Logger: testlog.Logger(t)}
	d := open(t, Config{DSN: filepath.Join(t.TempDir(), "d.db"), OnStart: wh.Start, OnFail: wh.Fail,
		AllowInsecureWebhooks: true, AllowPrivateWebhooks: true, Logger: testlog.Logger(t)})
	wh.Workers = d
	if err := d.PutWorker(ctx, Worker{Name: "w", MaxRunning: 1, WebhookURL: hook.URL, WebhookSecret: "0123456789abcdef"}); err != nil {
		t.Fatal(err)
	}
	ts, err := d.Assign(ctx, Assignment{Worker: "w", Start: time.Now().Add(-time.Second), End: time.Now().Add(time.Hour), Tasks: newTasks("t")})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"start", "start", "fail"} {
		if got := recv(t, events, "notice"); got != want {
			t.Fatalf("notice %d is %s, want %s", i, got, want)
		}
	}
	tk := waitStatus(t, d, ts[0].UUID, StatusFailed)
	if !strings.Contains(tk.LastError, "503") {
		t.Errorf("last error %q does not say the webhook refused", tk.LastError)
	}
}
