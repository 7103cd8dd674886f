package jobhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/testing/leakcheck"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

var zc *zktest.Cluster

func TestMain(m *testing.M) {
	// The browser's goroutines end with it: stopped before the leak check.
	os.Exit(zktest.RunTests(leakcheck.Checked(m, stopBrowser), &zc))
}

func testLogger(t *testing.T) *slog.Logger { return testlog.Logger(t) }

var httpNS atomic.Int64

// httpCluster is two instances of one job plus a handler on a separate
// registry center session, as an application's admin port would have.
type httpCluster struct {
	t     *testing.T
	ns    string
	mu    sync.Mutex
	kinds map[string][]job.Kind // server -> kinds executed
	srv   *httptest.Server
	rc    regcenter.Center
}

func newHTTPCluster(t *testing.T, cfg job.Config, token string) *httpCluster {
	t.Helper()
	return newHTTPClusterOn(t, cfg, token, regcenter.Config{Servers: zc.Servers()})
}

// newHTTPClusterOn is newHTTPCluster on the registry rcCfg names (its
// Servers or its Etcd endpoints).
func newHTTPClusterOn(t *testing.T, cfg job.Config, token string, rcCfg regcenter.Config) *httpCluster {
	t.Helper()
	return newHTTPClusterWith(t, cfg, jobhttp.Options{Token: token, Logger: testLogger(t)}, rcCfg)
}

// newHTTPClusterWith is newHTTPClusterOn with the handler's options.
func newHTTPClusterWith(t *testing.T, cfg job.Config, opts jobhttp.Options, rcCfg regcenter.Config) *httpCluster {
	t.Helper()
	hc := &httpCluster{t: t, ns: fmt.Sprintf("http%d-%d", os.Getpid(), httpNS.Add(1)), kinds: map[string][]job.Kind{}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcCfg.Namespace, rcCfg.SessionTimeout = hc.ns, 4*time.Second
	connect := func() regcenter.Center {
		rc, err := regcenter.Open(ctx, rcCfg, regcenter.WithLogger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		return rc
	}
	for _, id := range []string{"a1", "a2"} {
		rc := connect()
		s, err := job.NewScheduler(rc, job.WithServerID(id), job.WithLogger(testLogger(t).With("instance", id)))
		if err != nil {
			t.Fatal(err)
		}
		err = s.Add(ctx, cfg, job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
			hc.mu.Lock()
			hc.kinds[id] = append(hc.kinds[id], sc.Kind)
			hc.mu.Unlock()
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.Shutdown(sctx); err != nil {
				t.Errorf("shutdown %s: %v", id, err)
			}
		})
	}
	hc.rc = connect()
	mux := http.NewServeMux()
	h, err := jobhttp.New(hc.rc, opts)
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/shardjob/", http.StripPrefix("/shardjob", h))
	hc.srv = httptest.NewServer(mux)
	t.Cleanup(hc.srv.Close)
	return hc
}

func (hc *httpCluster) triggered(id string) int {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	n := 0
	for _, k := range hc.kinds[id] {
		if k == job.KindTrigger {
			n++
		}
	}
	return n
}

// do sends a request and returns the status code and body.
func (hc *httpCluster) do(method, path, token, body string) (int, string) {
	hc.t.Helper()
	req, err := http.NewRequest(method, hc.srv.URL+"/shardjob"+path, strings.NewReader(body))
	if err != nil {
		hc.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.srv.Client().Do(req)
	if err != nil {
		hc.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (hc *httpCluster) want(code int, method, path, token, body string) string {
	hc.t.Helper()
	got, text := hc.do(method, path, token, body)
	if got != code {
		hc.t.Errorf("%s %s: status %d, want %d: %s", method, path, got, code, text)
	}
	return text
}

func httpWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestHTTPReadOnly(t *testing.T) {
	hc := newHTTPCluster(t, job.Config{Name: "report", Cron: "0 0 0 1 1 *", ShardingTotalCount: 4}, "")

	var jobs []admin.JobSummary
	if err := json.Unmarshal([]byte(hc.want(200, "GET", "/jobs", "", "")), &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Name != "report" || jobs[0].Online != 2 || jobs[0].ShardingTotalCount != 4 || jobs[0].NextFire == nil {
		t.Errorf("GET /jobs: %+v", jobs)
	}
	var st admin.JobStatus
	if err := json.Unmarshal([]byte(hc.want(200, "GET", "/jobs/report", "", "")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Name != "report" || len(st.Servers) != 2 || len(st.Items) != 4 || !st.Servers[0].Online {
		t.Errorf("GET /jobs/report: %+v", st)
	}
	var d admin.Dump
	if err := json.Unmarshal([]byte(hc.want(200, "GET", "/jobs/report/dump", "", "")), &d); err != nil || len(d.Nodes) == 0 || d.Nodes[0].Path != "/report" {
		t.Errorf("GET /jobs/report/dump: %+v %v", d, err)
	}
	if yaml := hc.want(200, "GET", "/jobs/report/config", "", ""); !strings.Contains(yaml, "name: report") {
		t.Errorf("GET /jobs/report/config:\n%s", yaml)
	}
	if body := hc.want(404, "GET", "/jobs/nope", "", ""); !strings.Contains(body, `unknown job \"nope\"`) {
		t.Errorf("GET /jobs/nope: %s", body)
	}

	// Read-only: every POST is refused, with or without a token.
	for _, p := range []string{"/jobs/report/trigger", "/servers/a1/disable", "/jobs/report/remove", "/jobs/report/config"} {
		hc.want(403, "POST", p, "", "")
		hc.want(403, "POST", p, "anything", "")
	}
	if st := hc.status(); st.Servers[0].Disabled || st.Servers[0].TriggerPending {
		t.Errorf("a refused POST changed something: %+v", st.Servers[0])
	}
	hc.want(405, "DELETE", "/jobs/report", "", "")
}

func (hc *httpCluster) status() admin.JobStatus {
	hc.t.Helper()
	var st admin.JobStatus
	if err := json.Unmarshal([]byte(hc.want(200, "GET", "/jobs/report", "", "")), &st); err != nil {
		hc.t.Fatal(err)
	}
	return st
}

func TestHTTPOperations(t *testing.T) {
	const token = "s3cr3t-token"
	hc := newHTTPCluster(t, job.Config{Name: "report", Cron: "0 0 0 1 1 *", ShardingTotalCount: 4}, token)

	hc.want(401, "POST", "/jobs/report/trigger", "", "")
	hc.want(401, "POST", "/jobs/report/trigger", "wrong", "")
	hc.want(401, "POST", "/jobs/report/trigger", token+"x", "")

	// A job-wide trigger runs every item once.
	hc.want(200, "POST", "/jobs/report/trigger", token, "")
	httpWaitFor(t, "the triggered items", func() bool { return hc.triggered("a1")+hc.triggered("a2") == 4 })
	// Then one server only.
	before := hc.triggered("a2")
	hc.want(200, "POST", "/jobs/report/trigger?server=a2", token, "")
	httpWaitFor(t, "a2's triggered items", func() bool { return hc.triggered("a2") > before })
	if n := hc.triggered("a1"); n != 4-before {
		t.Errorf("a1 ran %d triggered items, want %d", n, 4-before)
	}

	// Server flags.
	hc.want(200, "POST", "/servers/a2/disable?job=report", token, "")
	if s := hc.status().Servers[1]; s.ID != "a2" || !s.Disabled {
		t.Errorf("after disable: %+v", s)
	}
	hc.want(200, "POST", "/servers/a2/enable", token, "")
	hc.want(200, "POST", "/servers/a1/pause", token, "")
	if s := hc.status().Servers[0]; !s.Paused {
		t.Errorf("after pause: %+v", s)
	}
	hc.want(200, "POST", "/servers/a1/resume?job=report", token, "")
	if s := hc.status().Servers[0]; s.Paused || s.Disabled {
		t.Errorf("after resume: %+v", s)
	}
	hc.want(404, "POST", "/servers/zz/pause", token, "")
	hc.want(404, "POST", "/servers/a1/pause?job=nope", token, "")

	// Items.
	body := hc.want(200, "POST", "/jobs/report/disable-items?items=1,3", token, "")
	if !strings.Contains(body, `"disabledItems": [`) || hc.status().DisabledItems[1] != 3 {
		t.Errorf("disable-items: %s", body)
	}
	hc.want(400, "POST", "/jobs/report/disable-items?items=9", token, "")
	hc.want(400, "POST", "/jobs/report/disable-items?items=x", token, "")
	hc.want(200, "POST", "/jobs/report/enable-items?items=1,3", token, "")
	if d := hc.status().DisabledItems; len(d) != 0 {
		t.Errorf("after enable-items: %v", d)
	}

	// Config: garbage is refused with the reason, a good document applied.
	if body := hc.want(400, "POST", "/jobs/report/config", token, "name: report\ncron: \"* * * *\"\nshardingTotalCount: 4\n"); !strings.Contains(body, "line 2") {
		t.Errorf("bad config: %s", body)
	}
	if body := hc.want(400, "POST", "/jobs/report/config", token, "name: report\ncron: \"@hourly\"\nshardingTotalCount: 4\nshardingStrategy: NO_SUCH\n"); !strings.Contains(body, "NO_SUCH") {
		t.Errorf("unknown strategy: %s", body)
	}
	hc.want(200, "POST", "/jobs/report/config", token, "name: report\ncron: \"@hourly\"\nshardingTotalCount: 4\n")
	if st := hc.status(); st.Cron != "@hourly" {
		t.Errorf("cron after config: %q", st.Cron)
	}

	// Shut a2 down.
	hc.want(200, "POST", "/servers/a2/shutdown?job=report", token, "")
	httpWaitFor(t, "a2 to leave", func() bool { return !hc.status().Servers[1].Online })
	hc.want(409, "POST", "/jobs/report/trigger?server=a2", token, "")

	// Remove.
	var res admin.Removal
	if err := json.Unmarshal([]byte(hc.want(200, "POST", "/jobs/report/remove?wait=20s", token, "")), &res); err != nil || res.Job != "report" {
		t.Errorf("remove: %+v %v", res, err)
	}
	hc.want(404, "GET", "/jobs/report", "", "")
	if body := hc.want(200, "GET", "/jobs", "", ""); strings.TrimSpace(body) != "[]" {
		t.Errorf("jobs after remove: %s", body)
	}
}
