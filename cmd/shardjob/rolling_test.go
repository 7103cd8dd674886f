package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/rollout"
	"github.com/shardjob/shardjob/internal/testing/testlog"
)

var probeAddr = regexp.MustCompile(`msg="serving probes" addr=(\S+)`)

func getStatus(url string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// A rolling update as Kubernetes makes one of a Deployment (maxSurge 1,
// maxUnavailable 0), by the same sequence of process starts and stops
// (internal/rollout): a new pod with a new server id starts, and once its
// readiness probe passes the oldest pod gets SIGTERM; three times over.
// Every second's fire of every item runs once (none lost), no item runs
// twice at once, and no fire runs twice: the pods stop gracefully, so
// nothing crashed to excuse a second run.
func TestRunRollingUpdateLosesNoFire(t *testing.T) {
	if testing.Short() {
		t.Skip("a rolling update of three shardjob run processes")
	}
	rep, err := rollout.Run(t.Context(), rollout.Options{Bin: shardjobBinary(t), Dir: t.TempDir(),
		Registry: []string{"servers: [" + strings.Join(zc.Servers(), ",") + "]"}, Namespace: newNamespace(),
		Progress: testlog.Writer{T: t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if !rep.OK() {
		t.Errorf("the rolling update lost, repeated or overlapped fires: %s; %v", rep, rep.Examples)
	}
	if len(rep.TeardownErrors) > 0 {
		t.Errorf("the new pods did not stop cleanly: %v", rep.TeardownErrors)
	}
}

// The probes answer as an orchestrator expects: 503 until every job is
// registered, 200 then, 503 from the signal on; a bad address is refused
// before anything starts.
func TestRunHealthProbes(t *testing.T) {
	code := runFileCtx(context.Background(), []string{"--health", "256.0.0.1:x", writeJobsFile(t, "regcenter:\n  servers: [127.0.0.1:1]\n  namespace: x\njobs:\n  - name: a\n    type: script\n    cron: '@hourly'\n    shardingTotalCount: 1\n    script:\n      command: [/bin/true]\n")}, io.Discard, io.Discard)
	if code != exitUsage {
		t.Errorf("--health with a bad address: exit %d, want %d", code, exitUsage)
	}

	var p probes
	srv, err := serveProbes("127.0.0.1:0", &p, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.close(); err != nil {
			t.Error(err)
		}
	}()
	if code, body := getStatus("http://" + srv.addr + "/livez"); code != 200 || body != "ok" {
		t.Errorf("GET /livez over HTTP: %d %q", code, body)
	}
	h := http.HandlerFunc(p.ServeHTTP)
	for _, c := range []struct {
		path string
		want int
		body string
	}{
		{"/livez", 200, "ok"},
		{"/readyz", 503, "starting: jobs not registered yet"},
		{"/nothing", 404, "404 page not found"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path, nil))
		if rec.Code != c.want || strings.TrimSpace(rec.Body.String()) != c.body {
			t.Errorf("GET %s: %d %q, want %d %q", c.path, rec.Code, rec.Body.String(), c.want, c.body)
		}
	}
	p.stop()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != 503 || strings.TrimSpace(rec.Body.String()) != "shutting down" {
		t.Errorf("GET /readyz after the signal: %d %q", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/readyz", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /readyz: %d, want 405", rec.Code)
	}
}
