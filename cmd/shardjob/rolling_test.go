package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardjob/shardjob/jobtype"
)

// pod is one instance of a rolling update: a shardjob run process, as a
// Deployment's pod runs it, stopped by SIGTERM as Kubernetes stops one.
type pod struct {
	id     string
	cmd    *exec.Cmd
	done   chan error // Wait's result
	stderr *syncBuffer
}

var probeAddr = regexp.MustCompile(`msg="serving probes" addr=(\S+)`)

// startPod starts shardjob run with --health and waits until its
// readiness probe answers 200, as Kubernetes waits before it goes on.
func startPod(t *testing.T, bin, id, path, stateDir string) *pod {
	t.Helper()
	p := &pod{id: id, done: make(chan error, 1), stderr: &syncBuffer{}}
	p.cmd = exec.Command(bin, "run", "--server-id", id, "--state-dir", stateDir, "--health", "127.0.0.1:0",
		"--shutdown-timeout", "20s", path)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }() // owned by the pod: ends with the process
	t.Cleanup(func() { // a pod the test did not stop
		select {
		case err := <-p.done:
			p.done <- err
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	deadline := time.After(2 * time.Minute)
	for {
		if m := probeAddr.FindStringSubmatch(p.stderr.String()); m != nil {
			if code, _ := getStatus("http://" + m[1] + "/readyz"); code == http.StatusOK {
				return p
			}
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("%s ended (%v) before it was ready:\n%s", id, err, p.stderr.String())
		case <-deadline:
			t.Fatalf("%s not ready within 2 minutes:\n%s", id, p.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *pod) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("%s: %v after SIGTERM:\n%s", p.id, err, p.stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not stop within 2 minutes", p.id)
	}
}

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

// awaitRunBy waits until the runs in path include one by server.
func awaitRunBy(t *testing.T, path, server string) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			for _, r := range readScriptRuns(t, path) {
				if r.ctx.ServerID == server {
					return
				}
			}
		}
		select {
		case <-deadline:
			t.Fatalf("%s ran no item within 2 minutes", server)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// scriptRun is one run the test job logged: when its command began and
// ended, and its sharding context.
type scriptRun struct {
	begin, end int64 // unix ns
	ctx        jobtype.Context
}

func (r scriptRun) through() time.Time {
	if r.ctx.Through.IsZero() {
		return r.ctx.FireTime
	}
	return r.ctx.Through
}

func readScriptRuns(t *testing.T, path string) []scriptRun {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []scriptRun
	for line := range strings.Lines(string(data)) {
		f := strings.SplitN(strings.TrimSpace(line), " ", 3)
		if len(f) != 3 {
			t.Fatalf("run line %q", line)
		}
		var r scriptRun
		var err1, err2 error
		r.begin, err1 = strconv.ParseInt(f[0], 10, 64)
		r.end, err2 = strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("run line %q: %v %v", line, err1, err2)
		}
		if err := json.Unmarshal([]byte(f[2]), &r.ctx); err != nil {
			t.Fatalf("run line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// A rolling update as Kubernetes makes one of a Deployment (maxSurge 1,
// maxUnavailable 0), by the same sequence of process starts and stops: a
// new pod with a new server id starts, and once its readiness probe
// passes the oldest pod gets SIGTERM; three times over.
// Every second's fire of every item runs (none lost), no item runs twice
// at once, and no fire runs twice: the pods stop gracefully, so nothing
// crashed to excuse a second run.
func TestRunRollingUpdateLosesNoFire(t *testing.T) {
	if testing.Short() {
		t.Skip("a rolling update of three instances takes about half a minute")
	}
	const items = 4
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	path := writeJobsFile(t, fmt.Sprintf(`regcenter:
  servers: [%s]
  namespace: %s
  sessionTimeout: 4s
jobs:
  - name: tick
    type: script
    cron: "* * * * * *"
    shardingTotalCount: %d
    failover: true
    script:
      shell: true
      command: 'b=$(date +%%s%%N); sleep 0.2; echo "$b $(date +%%s%%N) $1" >> %s'
`, strings.Join(zc.Servers(), ","), newNamespace(), items, out))

	bin := shardjobBinary(t)
	var pods []*pod
	for _, id := range []string{"web-7d9f-a", "web-7d9f-b", "web-7d9f-c"} {
		pods = append(pods, startPod(t, bin, id, path, filepath.Join(dir, id)))
	}
	// Each pod's place is taken before the next step: the old ones all
	// run items before the update starts, and each new one runs an item
	// before the oldest pod is stopped — events, not time.
	for _, p := range pods {
		awaitRunBy(t, out, p.id)
	}
	from := time.Now().Truncate(time.Second).Add(time.Second)
	for i, id := range []string{"web-5c2e-a", "web-5c2e-b", "web-5c2e-c"} {
		p := startPod(t, bin, id, path, filepath.Join(dir, id))
		pods = append(pods, p)
		awaitRunBy(t, out, id)
		pods[i].stop(t)
	}
	// The window ends two seconds after the last old pod stopped; wait
	// until every item's runs reach past it (gated on the runs, not on
	// time), then stop the new pods.
	to := time.Now().Truncate(time.Second).Add(2 * time.Second)
	deadline := time.After(2 * time.Minute)
	for {
		reached := map[int]bool{}
		if _, err := os.Stat(out); err == nil {
			for _, r := range readScriptRuns(t, out) {
				if !r.through().Before(to) {
					reached[r.ctx.ShardingItem] = true
				}
			}
		}
		if len(reached) == items {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("the items' runs did not reach %v within 2 minutes (reached %v)", to, reached)
		case <-time.After(100 * time.Millisecond):
		}
	}
	for _, p := range pods[3:] {
		p.stop(t)
	}

	runs := readScriptRuns(t, out)
	var lost, twice []string
	for s := from; !s.After(to); s = s.Add(time.Second) {
		for item := range items {
			n := 0
			for _, r := range runs {
				if r.ctx.ShardingItem == item && !s.Before(r.ctx.FireTime) && !s.After(r.through()) {
					n++
				}
			}
			switch {
			case n == 0:
				lost = append(lost, fmt.Sprintf("item %d @%s", item, s.Format("15:04:05")))
			case n > 1:
				twice = append(twice, fmt.Sprintf("item %d @%s", item, s.Format("15:04:05")))
			}
		}
	}
	kinds := map[string]int{}
	for _, r := range runs {
		kinds[r.ctx.Kind]++
	}
	t.Logf("%d runs by kind %v; the window %s–%s checked, %d item fires", len(runs), kinds,
		from.Format("15:04:05"), to.Format("15:04:05"), items*(int(to.Sub(from)/time.Second)+1))
	if len(lost) > 0 {
		t.Errorf("%d fires lost in the rolling update: %v", len(lost), lost)
	}
	if len(twice) > 0 {
		t.Errorf("%d fires ran twice, with no crash to excuse it: %v", len(twice), twice)
	}
	for item := range items {
		var rs []scriptRun
		for _, r := range runs {
			if r.ctx.ShardingItem == item {
				rs = append(rs, r)
			}
		}
		slices.SortFunc(rs, func(a, b scriptRun) int { return int(a.begin - b.begin) })
		for i := 1; i < len(rs); i++ {
			if rs[i].begin < rs[i-1].end {
				t.Errorf("item %d ran twice at once: on %s (fire %v) and on %s (fire %v)", item,
					rs[i-1].ctx.ServerID, rs[i-1].ctx.FireTime, rs[i].ctx.ServerID, rs[i].ctx.FireTime)
			}
		}
	}
	if t.Failed() {
		for _, p := range pods {
			t.Logf("%s:\n%s", p.id, p.stderr.String())
		}
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
