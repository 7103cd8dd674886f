package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

var zc *zktest.Cluster

func TestMain(m *testing.M) {
	code := zktest.RunTests(m, &zc)
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is the shardjob binary the tests that run it as a process share:
// built once, by the first that asks.
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

// shardjobBinary builds the command once (go build) and returns its path.
func shardjobBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		if built.dir, built.err = os.MkdirTemp("", "shardjob-bin-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "shardjob")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, goTool, "build", "-o", built.path, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

var nsSeq atomic.Int64

// newNamespace returns a namespace no other test uses.
func newNamespace() string { return fmt.Sprintf("cli%d-%d", os.Getpid(), nsSeq.Add(1)) }

func testLogger(t *testing.T) *slog.Logger { return testlog.Logger(t) }

// execRec is one execution seen by the test job.
type execRec struct {
	server string
	item   int
	kind   job.Kind
	fire   time.Time
	at     time.Time
}

// recorder collects what actually executes, on every instance.
type recorder struct {
	mu   sync.Mutex
	recs []execRec
}

func (r *recorder) job(server string) job.Job {
	return job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		r.mu.Lock()
		r.recs = append(r.recs, execRec{server: server, item: sc.Item, kind: sc.Kind, fire: sc.FireTime, at: time.Now()})
		r.mu.Unlock()
		return nil
	})
}

func (r *recorder) all() []execRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

// matching returns the executions for which keep is true.
func (r *recorder) matching(keep func(execRec) bool) []execRec {
	var out []execRec
	for _, e := range r.all() {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// fires groups regular fires at or after since by fire time.
func (r *recorder) fires(since time.Time) map[time.Time][]execRec {
	out := map[time.Time][]execRec{}
	for _, e := range r.all() {
		if e.kind == job.KindFire && !e.fire.Before(since) {
			out[e.fire] = append(out[e.fire], e)
		}
	}
	return out
}

// waitFires waits for n+1 fires at or after since in which every item of
// want ran, and returns the first n with their executions: a fire is only
// judged once the next one is complete too, so that late executions of it
// are in.
func (r *recorder) waitFires(t *testing.T, since time.Time, n int, want []int) ([]time.Time, map[time.Time][]execRec) {
	t.Helper()
	var done []time.Time
	var byFire map[time.Time][]execRec
	waitFor(t, 45*time.Second, fmt.Sprintf("%d complete fires of items %v after %s", n+1, want, since.Format("15:04:05.000")), func() bool {
		byFire = r.fires(since)
		done = done[:0]
		for f, recs := range byFire {
			ran := map[int]bool{}
			for _, e := range recs {
				ran[e.item] = true
			}
			complete := true
			for _, it := range want {
				complete = complete && ran[it]
			}
			if complete {
				done = append(done, f)
			}
		}
		return len(done) >= n+1
	})
	sort.Slice(done, func(i, j int) bool { return done[i].Before(done[j]) })
	return done[:n], byFire
}

// checkFire asserts that exactly the items of want ran in a fire, once
// each, and returns the items each server ran.
func checkFire(t *testing.T, fire time.Time, recs []execRec, want []int) map[string][]int {
	t.Helper()
	count := map[int]int{}
	by := map[string][]int{}
	for _, e := range recs {
		count[e.item]++
		by[e.server] = append(by[e.server], e.item)
	}
	for _, it := range want {
		if count[it] != 1 {
			t.Errorf("fire %s: item %d ran %d times, want once", fire.Format("15:04:05"), it, count[it])
		}
	}
	for it, n := range count {
		if !slices.Contains(want, it) {
			t.Errorf("fire %s: item %d ran %d times, want never", fire.Format("15:04:05"), it, n)
		}
	}
	for s := range by {
		slices.Sort(by[s])
	}
	return by
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, deadline time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", deadline, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var allSix = []int{0, 1, 2, 3, 4, 5}

func everySecond(name string) job.Config {
	return job.Config{Name: name, Cron: "* * * * * *", ShardingTotalCount: 6}
}

// instance is one scheduler on its own registry session, as one process
// of an application would have.
type instance struct {
	id    string
	rc    regcenter.Center
	sched *job.Scheduler
	once  sync.Once
}

func (in *instance) stop(t *testing.T) {
	in.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := in.sched.Shutdown(ctx); err != nil {
			t.Errorf("shutdown %s: %v", in.id, err)
		}
		in.rc.Close()
	})
}

func (in *instance) runs(name string) bool { return slices.Contains(in.sched.Jobs(), name) }

// cluster is three instances s1, s2, s3 running one job with a recording
// Job.
type cluster struct {
	t      *testing.T
	ns     string
	name   string
	digest string
	// etcd, when set, are the endpoints of the etcd the cluster runs on
	// instead of the package's ZooKeeper.
	etcd []string
	// pgURL, when set, is the PostgreSQL database the cluster runs on.
	pgURL string
	rec   *recorder
	inst  map[string]*instance
}

func newCluster(t *testing.T, cfg job.Config, digest string) *cluster {
	t.Helper()
	return newClusterOn(t, cfg, digest, nil)
}

// newClusterOn is newCluster on the etcd at the endpoints etcd, or on the
// package's ZooKeeper when etcd is empty.
func newClusterOn(t *testing.T, cfg job.Config, digest string, etcd []string) *cluster {
	t.Helper()
	c := &cluster{t: t, ns: newNamespace(), name: cfg.Name, digest: digest, etcd: etcd, rec: &recorder{}, inst: map[string]*instance{}}
	for _, id := range []string{"s1", "s2", "s3"} {
		c.inst[id] = c.start(id, cfg)
	}
	return c
}

func (c *cluster) rcConfig() regcenter.Config {
	if c.pgURL != "" {
		return regcenter.Config{URL: c.pgURL, Namespace: c.ns, SessionTimeout: 4 * time.Second}
	}
	if len(c.etcd) > 0 {
		return regcenter.Config{Etcd: c.etcd, Namespace: c.ns, SessionTimeout: 4 * time.Second, Digest: c.digest}
	}
	return regcenter.Config{Servers: zc.Servers(), Namespace: c.ns, SessionTimeout: 4 * time.Second, Digest: c.digest}
}

func (c *cluster) start(id string, cfg job.Config) *instance {
	t := c.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := regcenter.Open(ctx, c.rcConfig(), regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatalf("regcenter for %s: %v", id, err)
	}
	s, err := job.NewScheduler(rc, job.WithServerID(id), job.WithLogger(testLogger(t).With("instance", id)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, cfg, c.rec.job(id)); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	in := &instance{id: id, rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })
	return in
}

// cli runs the command in-process against the cluster's namespace; the
// connection flags come after the command's own arguments.
func (c *cluster) cli(args ...string) (int, string, string) {
	if c.pgURL != "" {
		args = append(args, "--pg", c.pgURL, "--namespace", c.ns)
	} else if len(c.etcd) > 0 {
		args = append(args, "--etcd", strings.Join(c.etcd, ","), "--namespace", c.ns)
	} else {
		args = append(args, "--zk", strings.Join(zc.Servers(), ","), "--namespace", c.ns)
	}
	if c.digest != "" {
		args = append(args, "--digest", c.digest)
	}
	return runCLI(args...)
}

func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustCLI runs the command and fails the test unless it exits 0.
func (c *cluster) mustCLI(args ...string) string {
	c.t.Helper()
	code, out, errOut := c.cli(args...)
	if code != 0 {
		c.t.Fatalf("shardjob %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
	}
	if errOut != "" {
		c.t.Errorf("shardjob %s: unexpected stderr %q", strings.Join(args, " "), errOut)
	}
	return out
}

// wantFail runs the command, expects exit code want and one line on
// stderr containing every fragment, and returns that line.
func (c *cluster) wantFail(want int, fragments []string, args ...string) string {
	c.t.Helper()
	code, out, errOut := c.cli(args...)
	checkFailure(c.t, args, want, fragments, code, out, errOut)
	return errOut
}

func checkFailure(t *testing.T, args []string, want int, fragments []string, code int, out, errOut string) {
	t.Helper()
	if code != want {
		t.Errorf("shardjob %s: exit %d, want %d (stderr %q)", strings.Join(args, " "), code, want, errOut)
	}
	if out != "" {
		t.Errorf("shardjob %s: unexpected stdout %q", strings.Join(args, " "), out)
	}
	if strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, "\n") {
		t.Errorf("shardjob %s: stderr is not one line: %q", strings.Join(args, " "), errOut)
	}
	for _, f := range fragments {
		if !strings.Contains(errOut, f) {
			t.Errorf("shardjob %s: stderr %q does not mention %q", strings.Join(args, " "), errOut, f)
		}
	}
}

// status reads the job's status through the command's JSON output.
func (c *cluster) status() admin.JobStatus {
	c.t.Helper()
	out := c.mustCLI("status", c.name, "--output", "json")
	var st admin.JobStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		c.t.Fatalf("status JSON: %v\n%s", err, out)
	}
	return st
}

func serverOf(st admin.JobStatus, id string) admin.ServerStatus {
	for _, s := range st.Servers {
		if s.ID == id {
			return s
		}
	}
	return admin.ServerStatus{}
}

// idle reports whether no trigger is pending and no item is running.
func (c *cluster) idle() bool {
	st := c.status()
	for _, s := range st.Servers {
		if s.TriggerPending || len(s.Running) > 0 {
			return false
		}
	}
	return true
}

// warmUp waits until the cluster has run two complete fires.
func (c *cluster) warmUp() {
	c.t.Helper()
	c.rec.waitFires(c.t, time.Now(), 2, allSix)
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := t.TempDir() + "/" + name
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
