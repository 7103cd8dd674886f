package jobhttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/jobhttp"
)

// TestScheduleEndpoint: POST /jobs/{job}/schedule edits the cron and the
// item count of the stored config and nothing else; a bad cron, a bad
// count, an unknown field, an empty, oversized or garbage body is refused
// naming the problem, and nothing is written.
func TestScheduleEndpoint(t *testing.T) {
	cfg := quiet("report", 4)
	cfg.Description = "kept as it was"
	cfg.Failover = true
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, cfg)
	api := cc.api()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node := func() string {
		data, _, err := cc.rc.Get(ctx, layout.Job("report").Config())
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}

	api.want(http.StatusUnauthorized, "POST", "/jobs/report/schedule", "", `{"cron": "@hourly"}`)
	before := node()
	for _, c := range []struct {
		body string
		code int
		say  string
	}{
		{`{"cron": "* * *"}`, 400, `cron \"* * *\"`},
		{`{"cron": "@never"}`, 400, "cron"},
		{`{"shardingTotalCount": 0}`, 400, "shardingTotalCount 0"},
		{`{"shardingTotalCount": 100000}`, 400, "shardingTotalCount 100000"},
		{`{"cron": "@hourly", "shardingTotalCount": "4"}`, 400, "shardingTotalCount"},
		{`{"cron": "@hourly", "items": 4}`, 400, `unknown field \"items\"`},
		{`{}`, 400, "give a cron, a shardingTotalCount or both"},
		{``, 400, "send a JSON body"},
		{`{"cron": "@hourly"} {"cron": "@daily"}`, 400, "more than one JSON value"},
		{`not json`, 400, "not a schedule edit"},
		{`{"cron": "` + strings.Repeat("*", 5000) + `"}`, 413, "larger than 4096 bytes"},
	} {
		if body := api.want(c.code, "POST", "/jobs/report/schedule", consoleToken, c.body); !strings.Contains(body, c.say) {
			t.Errorf("POST %.60q: %s does not say %q", c.body, body, c.say)
		}
	}
	api.want(http.StatusNotFound, "POST", "/jobs/nope/schedule", consoleToken, `{"cron": "@hourly"}`)
	if after := node(); after != before {
		t.Fatalf("refused edits changed the config node:\n%s\nwas:\n%s", after, before)
	}

	body := api.want(http.StatusOK, "POST", "/jobs/report/schedule", consoleToken, `{"cron": "0 15 3 * * *", "shardingTotalCount": 8}`)
	if !strings.Contains(body, `"changed": true`) {
		t.Errorf("edit: %s", body)
	}
	st := cc.jobStatus("report")
	if st.Cron != "0 15 3 * * *" || st.ShardingTotalCount != 8 || st.Description != "kept as it was" || !st.Failover {
		t.Errorf("after the edit: cron %q, %d items, description %q, failover %v", st.Cron, st.ShardingTotalCount, st.Description, st.Failover)
	}
	// Only the cron: the count stays. The same again changes nothing.
	api.want(http.StatusOK, "POST", "/jobs/report/schedule", consoleToken, `{"cron": "0 0 4 * * *"}`)
	if body := api.want(http.StatusOK, "POST", "/jobs/report/schedule", consoleToken, `{"cron": "0 0 4 * * *"}`); !strings.Contains(body, `"changed": false`) {
		t.Errorf("a repeated edit: %s", body)
	}
	if st := cc.jobStatus("report"); st.Cron != "0 0 4 * * *" || st.ShardingTotalCount != 8 {
		t.Errorf("after the cron-only edit: cron %q, %d items", st.Cron, st.ShardingTotalCount)
	}
}

// TestConsoleServedWithSecurityHeaders: the console's files are served
// from the binary under the mount prefix with their types and the
// security headers, /console redirects relatively, every JSON answer has
// the headers too, and no answer carries a CORS header.
func TestConsoleServedWithSecurityHeaders(t *testing.T) {
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, quiet("report", 1))
	client := cc.srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(path string, origin bool) (*http.Response, string) {
		req, err := http.NewRequest("GET", cc.srv.URL+"/shardjob"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if origin {
			req.Header.Set("Origin", "http://evil.example")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for path, want := range map[string]string{
		"/console/":              "text/html",
		"/console/app.js":        "text/javascript",
		"/console/style.css":     "text/css",
		"/console/views/jobs.js": "text/javascript",
		"/jobs":                  "application/json",
	} {
		resp, body := get(path, true)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), want) {
			t.Errorf("GET %s: %d %q", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		h := resp.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: headers %v", path, h)
		}
		for k := range h {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("GET %s: CORS header %s", path, k)
			}
		}
		if strings.HasSuffix(path, ".html") || path == "/console/" {
			// No inline script: every script is a file.
			if strings.Contains(body, "<script>") || strings.Contains(body, "onclick") || !strings.Contains(body, `src="app.js"`) {
				t.Errorf("the page has inline script or no app.js:\n%s", body)
			}
		}
	}
	if resp, _ := get("/console", false); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "console/" {
		t.Errorf("GET /console: %d, Location %q, want a relative redirect to console/", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := get("/console/nope.js", false); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "no file nope.js") {
		t.Errorf("GET /console/nope.js: %d %s", resp.StatusCode, body)
	}
	if resp, body := get("/dispatch/workers", false); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "dispatcher is not configured") {
		t.Errorf("GET /dispatch/workers without a dispatcher: %d %s", resp.StatusCode, body)
	}
	// The index lists the new endpoints.
	if _, body := get("/", false); !strings.Contains(body, "POST /jobs/{job}/schedule") || !strings.Contains(body, "GET /console/") {
		t.Errorf("GET /: %s", body)
	}
}
