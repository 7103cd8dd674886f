package jobfile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shardjob/shardjob/errhandler"
	"github.com/shardjob/shardjob/internal/testing/leakcheck"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
	"github.com/shardjob/shardjob/jobtype"
	"github.com/shardjob/shardjob/jobtype/dataflow"
	"github.com/shardjob/shardjob/jobtype/httpjob"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

var zk *zktest.Cluster

// childEnv, when set, makes the test binary an instance process: it runs
// the YAML file the variable names until it is killed (see
// TestScriptOrphansReapedAfterKill9).
const childEnv = "JOBFILE_TEST_INSTANCE"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(runChild(path))
	}
	os.Exit(zktest.RunTests(leakcheck.Checked(m), &zk))
}

func runChild(path string) int {
	f, err := jobfile.LoadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err = jobfile.Run(context.Background(), f, jobfile.RunOptions{
		Options:  jobfile.Options{StateDir: os.Getenv("JOBFILE_TEST_STATE"), Logger: log},
		ServerID: os.Getenv("JOBFILE_TEST_SERVER"),
	})
	fmt.Fprintln(os.Stderr, "instance ended:", err)
	return 1
}

var nsCounter atomic.Int64

func namespace() string { return fmt.Sprintf("jf%d-%d", os.Getpid(), nsCounter.Add(1)) }

// file writes a YAML file of jobs for namespace ns and loads it.
func file(t *testing.T, ns, jobs string) (*jobfile.File, string) {
	t.Helper()
	clearRegcenterEnvForTest(t)
	doc := fmt.Sprintf("regcenter:\n  servers: [%s]\n  namespace: %s\n  sessionTimeout: 4s\njobs:\n%s", strings.Join(zk.Servers(), ", "), ns, jobs)
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := jobfile.LoadFile(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return f, path
}

// A file's Go jobs are bound to the implementations Options.Handlers
// names, by handler or by the job's name; one whose implementation is
// missing is refused with job.ErrUnknownHandler, naming it, and the others
// are added and run. An implementation runs as it is: a RangeJob gets its
// items as a range.
func TestAddBindsGoJobsByName(t *testing.T) {
	ns := namespace()
	f, _ := file(t, ns, `  - name: orders
    handler: orderSync
    cron: "* * * * * *"
    shardingTotalCount: 2
  - name: audit
    cron: "* * * * * *"
    shardingTotalCount: 1
`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := zookeeper.Open(ctx, f.Regcenter, regcenter.WithLogger(testlog.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := job.NewScheduler(rc, job.WithServerID("y1"), job.WithLogger(testlog.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{id: "y1", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t, 10*time.Second) })
	ranges := make(chan job.RangeContext, 64)
	orders := job.RangeFunc(func(_ context.Context, r job.RangeContext) error {
		select {
		case ranges <- r:
		default:
		}
		return nil
	})
	err = jobfile.Add(ctx, s, f.Jobs, ns, jobfile.Options{Handlers: map[string]job.Job{"orderSync": orders}, Logger: testlog.Logger(t)})
	if !errors.Is(err, job.ErrUnknownHandler) || !strings.Contains(err.Error(), `"audit"`) {
		t.Fatalf("missing handler: %v, want job.ErrUnknownHandler naming audit", err)
	}
	if got := s.Jobs(); len(got) != 1 || got[0] != "orders" {
		t.Fatalf("jobs added %v, want [orders]", got)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case r := <-ranges:
			if r.Items() == 2 {
				return
			}
		case <-ctx.Done():
			t.Fatal("the RangeJob was never given its two items as one range")
		}
	}
}

type instance struct {
	id    string
	rc    *zookeeper.Center
	sched *job.Scheduler
}

// start runs f's jobs as instance id, as jobfile.Run does, in this process.
func start(t *testing.T, f *jobfile.File, id, stateDir string) *instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := f.Regcenter
	rc, err := zookeeper.Open(ctx, cfg, regcenter.WithLogger(testlog.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	log := testlog.Logger(t).With("instance", id)
	s, err := job.NewScheduler(rc, job.WithServerID(id), job.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{id: id, rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t, 10*time.Second) })
	if err := jobfile.Add(ctx, s, f.Jobs, cfg.Namespace, jobfile.Options{StateDir: stateDir, Logger: log}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return in
}

func (in *instance) stop(t *testing.T, grace time.Duration) {
	if in.sched == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	// An error is expected when items had to be cut short.
	if err := in.sched.Shutdown(ctx); err != nil {
		t.Logf("shutdown %s: %v", in.id, err)
	}
	if err := in.rc.Close(); err != nil {
		t.Logf("close %s: %v", in.id, err)
	}
	in.sched = nil
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, deadline time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runs reads the contexts a test script appended to path, one JSON per line.
func runs(t *testing.T, path string) []jobtype.Context {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []jobtype.Context
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c jobtype.Context
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			continue // a line being written
		}
		out = append(out, c)
	}
	return out
}

// fullFire returns a fire that ran every item of total, and by which servers.
func fullFire(cs []jobtype.Context, total int) (time.Time, map[string][]int, bool) {
	byFire := map[time.Time]map[int]string{}
	for _, c := range cs {
		if c.Kind != string(job.KindFire) {
			continue
		}
		if byFire[c.FireTime] == nil {
			byFire[c.FireTime] = map[int]string{}
		}
		byFire[c.FireTime][c.ShardingItem] = c.ServerID
	}
	var fires []time.Time
	for f, items := range byFire {
		if len(items) == total {
			fires = append(fires, f)
		}
	}
	sort.Slice(fires, func(i, j int) bool { return fires[i].Before(fires[j]) })
	for _, f := range fires {
		by := map[string][]int{}
		for it, s := range byFire[f] {
			by[s] = append(by[s], it)
		}
		if len(by) >= 2 {
			return f, by, true
		}
	}
	return time.Time{}, nil, false
}

func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestScriptJobShardedAcrossInstances(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs")
	// The context arrives as the last argument; the script appends it.
	sh := writeScript(t, dir, "record.sh", `eval "ctx=\${$#}"; printf '%s\n' "$ctx" >> "$1"`+"\n")
	f, _ := file(t, namespace(), fmt.Sprintf(`  - name: report
    type: script
    cron: "* * * * * *"
    shardingTotalCount: 4
    shardingItemParameters: "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen"
    script:
      command: [%s, %s]
`, sh, log))
	start(t, f, "s1", filepath.Join(dir, "s1"))
	start(t, f, "s2", filepath.Join(dir, "s2"))
	var by map[string][]int
	waitFor(t, "a fire of all 4 items on both instances", 60*time.Second, func() bool {
		var ok bool
		_, by, ok = fullFire(runs(t, log), 4)
		return ok
	})
	if len(by["s1"])+len(by["s2"]) != 4 {
		t.Fatalf("fire ran items %v", by)
	}
	for _, c := range runs(t, log) {
		want := map[int]string{0: "Beijing", 1: "Shanghai", 2: "Guangzhou", 3: "Shenzhen"}[c.ShardingItem]
		if c.ShardingParameter != want || c.JobName != "report" || c.ShardingTotalCount != 4 {
			t.Fatalf("context %+v", c)
		}
	}
}

func TestHTTPJobShardedAcrossInstances(t *testing.T) {
	var mu sync.Mutex
	var got []jobtype.Context
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var hdr, body jobtype.Context
		herr := json.Unmarshal([]byte(r.Header.Get(httpjob.DefaultContextHeader)), &hdr)
		berr := json.NewDecoder(r.Body).Decode(&body)
		if herr != nil || berr != nil || hdr != body || r.Method != http.MethodPut || r.URL.Path != "/sync" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, hdr)
		mu.Unlock()
	}))
	defer srv.Close()
	f, _ := file(t, namespace(), fmt.Sprintf(`  - name: push
    type: http
    cron: "* * * * * *"
    shardingTotalCount: 3
    http:
      method: PUT
      url: %s/sync
      allowPrivateAddresses: true
      body: "{{.JSON}}"
      timeout: 5s
`, srv.URL))
	start(t, f, "h1", "")
	start(t, f, "h2", "")
	waitFor(t, "a fire of all 3 items on both instances", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, _, ok := fullFire(got, 3)
		return ok
	})
}

// alive reports whether pid names a live (not zombie) process.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

// pidsIn reads the pids a hanging test script wrote.
func pidsIn(t *testing.T, path string) []int {
	data, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(string(data), "\n") {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %q", data)
		}
		out = append(out, n)
	}
	return out
}

// hangScript, while the file hang exists in dir, starts a grandchild that
// ignores SIGTERM, writes both pids to pids and waits; otherwise it
// records its context in runs.
func hangScript(t *testing.T, dir string) string {
	return writeScript(t, dir, "hang.sh", fmt.Sprintf(`eval "ctx=\${$#}"
if [ -e %[1]s/hang ]; then
  (trap '' TERM; exec sleep 600) &
  echo $$ $! > %[1]s/pids
  wait
fi
printf '%%s\n' "$ctx" >> %[1]s/runs
`, dir))
}

// Shutdown stops a script item's whole process tree: the script and its
// grandchild that ignores SIGTERM.
func TestScriptTreeGoneAfterShutdown(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hang"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sh := hangScript(t, dir)
	f, _ := file(t, namespace(), fmt.Sprintf(`  - name: long
    type: script
    cron: "* * * * * *"
    shardingTotalCount: 1
    script:
      command: [%s]
      gracePeriod: 300ms
`, sh))
	in := start(t, f, "d1", filepath.Join(dir, "state"))
	var procs []int
	waitFor(t, "the script's pids", 60*time.Second, func() bool { procs = pidsIn(t, filepath.Join(dir, "pids")); return len(procs) == 2 })
	in.stop(t, 500*time.Millisecond) // shorter than the script: its context is cancelled
	for _, p := range procs {
		if alive(p) {
			t.Errorf("process %d outlived Shutdown", p)
		}
	}
}

// failures collects what the error handler "test-failures" is told.
var failures = struct {
	mu  sync.Mutex
	got []errhandler.Failure
}{}

func init() {
	err := errhandler.Register("test-failures", errhandler.HandlerFunc(func(_ context.Context, f errhandler.Failure) error {
		failures.mu.Lock()
		failures.got = append(failures.got, f)
		failures.mu.Unlock()
		return nil
	}))
	if err != nil {
		panic(err)
	}
}

// A job timeout ends the item's context: the tree goes, and the item
// reaches the job's error handler as a timed-out failure.
func TestScriptTreeGoneAfterTimeout(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hang"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sh := hangScript(t, dir)
	ns := namespace()
	f, _ := file(t, ns, fmt.Sprintf(`  - name: bounded
    type: script
    cron: "@every 1h"
    shardingTotalCount: 1
    timeout: 1s
    errorHandler: test-failures
    script:
      command: [%s]
      gracePeriod: 200ms
`, sh))
	in := start(t, f, "t1", filepath.Join(dir, "state"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Run it now rather than in an hour: the operator's trigger flag.
	if _, err := in.rc.Create(ctx, "/bounded/servers/t1/trigger", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	var procs []int
	waitFor(t, "the script's pids", 60*time.Second, func() bool { procs = pidsIn(t, filepath.Join(dir, "pids")); return len(procs) == 2 })
	var got errhandler.Failure
	waitFor(t, "the error handler to hear of the timeout", 60*time.Second, func() bool {
		failures.mu.Lock()
		defer failures.mu.Unlock()
		for _, f := range failures.got {
			if f.Job == "bounded" {
				got = f
				return true
			}
		}
		return false
	})
	if !got.TimedOut || !errors.Is(got.Err, job.ErrExecutionTimeout) {
		t.Errorf("failure %+v, want a timeout", got)
	}
	for _, p := range procs {
		if alive(p) {
			t.Errorf("process %d outlived its timed-out item", p)
		}
	}
}

// An instance killed with -9 leaves its script's grandchild behind (the
// parent-death signal reaches only the script); the next start of the same
// server kills it and runs the item again as a misfire.
func TestScriptOrphansReapedAfterKill9(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hang"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sh := hangScript(t, dir)
	state := filepath.Join(dir, "state")
	f, path := file(t, namespace(), fmt.Sprintf(`  - name: orphaned
    type: script
    cron: "*/2 * * * * *"
    shardingTotalCount: 1
    script:
      command: [%s]
`, sh))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(self, "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+path, "JOBFILE_TEST_STATE="+state, "JOBFILE_TEST_SERVER=k1")
	child.Stderr = testlog.Writer{T: t}
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var procs []int
	waitFor(t, "the script's pids", 60*time.Second, func() bool { procs = pidsIn(t, filepath.Join(dir, "pids")); return len(procs) == 2 })
	recs, err := os.ReadDir(state)
	if err != nil || len(recs) != 1 {
		t.Fatalf("state dir while the item runs: %v %v", recs, err)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err == nil {
		t.Fatal("killed instance exited cleanly")
	}
	script, grandchild := procs[0], procs[1]
	waitFor(t, "the parent-death signal to end the script", 20*time.Second, func() bool { return !alive(script) })
	if !alive(grandchild) {
		t.Fatal("the grandchild died with the instance; nothing left to reap (the test proves nothing)")
	}
	// Its killed fire: the one the state record names.
	data, err := os.ReadFile(filepath.Join(state, recs[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Fire int64 `json:"fire"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	killedFire := time.UnixMilli(rec.Fire)

	if err := os.Remove(filepath.Join(dir, "hang")); err != nil {
		t.Fatal(err)
	}
	start(t, f, "k1", state)
	if alive(grandchild) {
		t.Fatalf("orphan %d still running after the restart", grandchild)
	}
	waitFor(t, "the killed item's misfire run", 60*time.Second, func() bool {
		for _, c := range runs(t, filepath.Join(dir, "runs")) {
			if c.Kind == string(job.KindMisfire) && !c.FireTime.After(killedFire) {
				return true
			}
		}
		return false
	})
	if ents, _ := os.ReadDir(state); len(ents) > 1 {
		t.Errorf("state records left: %v", ents)
	}
}

// A dataflow job bound by name, streaming as its YAML section says, on two
// instances: every item of a fire streams all its batches.
func TestDataflowJobShardedAcrossInstances(t *testing.T) {
	var mu sync.Mutex
	fetched := map[string]int{} // task/item -> batches handed out
	var got []jobtype.Context
	fetch := func(_ context.Context, sc job.ShardingContext) ([]int, error) {
		mu.Lock()
		defer mu.Unlock()
		k := fmt.Sprintf("%s/%d", sc.TaskID, sc.Item)
		if fetched[k] == 3 {
			return nil, nil
		}
		fetched[k]++
		return []int{fetched[k]}, nil
	}
	process := func(_ context.Context, sc job.ShardingContext, batch []int) error {
		if batch[0] == 3 { // the last batch of the item's stream
			mu.Lock()
			got = append(got, jobtype.ContextOf(sc))
			mu.Unlock()
		}
		return nil
	}
	flow, err := dataflow.New(fetch, process)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := file(t, namespace(), `  - name: ship
    type: dataflow
    handler: shipping
    cron: "* * * * * *"
    shardingTotalCount: 4
    dataflow: {streaming: true}
`)
	for _, id := range []string{"f1", "f2"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rc, err := zookeeper.Open(ctx, f.Regcenter, regcenter.WithLogger(testlog.Logger(t)))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		s, err := job.NewScheduler(rc, job.WithServerID(id), job.WithLogger(testlog.Logger(t)))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		in := &instance{id: id, rc: rc, sched: s}
		t.Cleanup(func() { in.stop(t, 10*time.Second) })
		err = jobfile.Add(ctx, s, f.Jobs, f.Regcenter.Namespace, jobfile.Options{Handlers: map[string]job.Job{"shipping": flow}})
		if err == nil {
			err = s.Start(ctx)
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a fire whose 4 items streamed to the end on both instances", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, _, ok := fullFire(got, 4)
		return ok
	})
}

// errorHandler stop pauses the job on the instance whose executions keep
// failing: its paused flag is set, as an operator's pause would be.
func TestStopHandlerPausesTheFailingInstance(t *testing.T) {
	f, _ := file(t, namespace(), `  - name: broken
    type: script
    cron: "* * * * * *"
    shardingTotalCount: 1
    errorHandler: {type: stop, after: 2}
    script:
      command: [/bin/sh, -c, "echo no database >&2; exit 4"]
`)
	in := start(t, f, "p1", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitFor(t, "the paused flag", 60*time.Second, func() bool {
		ok, _, err := in.rc.Exists(ctx, "/broken/servers/p1/paused")
		return err == nil && ok
	})
	data, _, err := in.rc.Get(ctx, "/broken/execution/0/completed")
	if err != nil || !strings.Contains(string(data), "exited with code 4") || !strings.Contains(string(data), "no database") {
		t.Fatalf("completed record %q (%v), want the exit code and stderr", data, err)
	}
}
