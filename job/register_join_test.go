package job_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// TestJoiningExistingJobsCost counts the requests an instance sends to
// start jobs that exist already: N jobs made by a first instance, joined
// by a second (a server id new to them), then by the second again after
// a graceful restart (its server nodes left from its previous life). The
// count is the registry's own (regcenter.Stats, as tools/scalebench counts
// it: reads, writes, transactions and watches, each request one), over
// Start, per job, the instance's own registration included: at most 3
// (issue 44). The jobs' nodes are read several to a request and their
// writes sent several to a transaction; what is left per job is its two
// watches (config, flags). Each job ends registered under the instance's
// session.
func TestJoiningExistingJobsCost(t *testing.T) {
	const (
		n       = 50
		perJob  = 3.0
		watches = 2.2 // a job's two, and the instance's own
	)
	ns := namespace(t)
	obs := observer(t, ns)
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("j%02d", i)
	}
	cfgs := make([]job.Config, n)
	for i, name := range names {
		// Fires once a year: nothing prepares at once.
		cfgs[i] = job.Config{Name: name, Cron: "0 0 0 1 1 *", ShardingTotalCount: 2}
	}
	start := func(id string) (*instance, regcenter.Stats, *callLog) {
		in, st, log := startCounted(t, ctx, ns, id, cfgs, rec)
		for _, name := range names {
			if ok, stat, err := obs.Exists(ctx, "/"+name+"/servers/"+id+"/status"); err != nil || !ok || stat.EphemeralOwner != in.rc.Session().ID() {
				t.Fatalf("job %s: %s's status exists=%v owner 0x%x (%v), want its session's", name, id, ok, stat.EphemeralOwner, err)
			}
		}
		return in, st, log
	}
	check := func(what string, st regcenter.Stats, log *callLog) {
		t.Helper()
		per := func(v int64) float64 { return float64(v) / n }
		t.Logf("%s, %d jobs: %.2f requests per job (reads %.2f, writes %.2f, multis %.2f, watches %.2f); %d in all",
			what, n, per(st.Total()), per(st.Reads), per(st.Writes), per(st.Multis), per(st.Watches), st.Total())
		t.Logf("%s: calls, a job's name as J:\n%s", what, log.summary())
		if per(st.Total()) > perJob {
			t.Errorf("%s: %.2f requests per job, want at most %v", what, per(st.Total()), perJob)
		}
		if per(st.Watches) > watches {
			t.Errorf("%s: %.2f watches per job, want at most %v", what, per(st.Watches), watches)
		}
	}
	start("s1")
	s2, st, log := start("s2")
	check("a second instance", st, log)
	s2.stop(t)
	_, st, log = start("s2")
	check("the second restarted", st, log)
}

// An id whose holder is a process of this host that is gone (its session
// not yet expired) is taken over at once, as with one job
// (TestServerIDOfADeadProcessOfThisHostIsTakenOver), when its jobs join
// in a batch: the dead process's statuses are replaced in the batch's
// transaction, and the instance runs every job.
func TestDeadProcessesStatusesAreTakenOverInABatch(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfgs := []job.Config{everySecond("taken-a", 2), everySecond("taken-b", 2)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obs := observer(t, ns)
	for _, cfg := range cfgs {
		data, err := cfg.WithDefaults().Encode()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/" + cfg.Name + "/leader/sharding/necessary", "/" + cfg.Name + "/servers/same"} {
			if _, err := obs.Create(ctx, p, nil, regcenter.Persistent); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := obs.Create(ctx, "/"+cfg.Name+"/config", data, regcenter.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	// A session that stays alive, holding what a killed process left: its
	// instance node naming a pid that does not exist, and status nodes.
	ghost, err := regcenter.Open(ctx, onRegistry(regcenter.Config{Namespace: ns, SessionTimeout: 30 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	defer ghost.Close()
	host, _ := os.Hostname()
	node := fmt.Sprintf(`{"faultTolerance":1,"holder":{"host":%q,"pid":%d,"process":"feedfacefeedface","token":"0123456789abcdef"}}`, host, deadPID(t))
	if _, err := ghost.Create(ctx, "/.placement/instances/same", []byte(node), regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range cfgs {
		if _, err := ghost.Create(ctx, "/"+cfg.Name+"/servers/same/status", []byte("READY"), regcenter.Ephemeral); err != nil {
			t.Fatal(err)
		}
	}

	began := time.Now()
	in, _, log := startCounted(t, ctx, ns, "same", cfgs, rec)
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("start took %v: it waited for the dead process's 30 s session", took)
	}
	for _, cfg := range cfgs {
		status := "/" + cfg.Name + "/servers/same/status"
		if log.count(func(c string) bool {
			return strings.HasPrefix(c, "multi ") && strings.Contains(c+" ", " -"+status+" +"+status+" ")
		}) == 0 {
			t.Errorf("job %s: the dead process's status was not replaced in a transaction; sent:\n%s", cfg.Name, log.summary())
		}
		if ok, st, err := obs.Exists(ctx, status); err != nil || !ok || st.EphemeralOwner != in.rc.Session().ID() {
			t.Errorf("job %s: status exists=%v owner 0x%x (%v), want the new instance's", cfg.Name, ok, st.EphemeralOwner, err)
		}
	}
	waitUntil(t, 20*time.Second, func() bool {
		ran := map[string]bool{}
		for _, r := range rec.snapshot() {
			ran[r.job] = true
		}
		return len(ran) == len(cfgs)
	})
}

// A process that restarts under the same server id before its old session
// expired owes its items the fires they missed, as with one job
// (TestFireMissedDuringCatchUpIsStillOwed), when its jobs join in a
// batch: the old life's statuses are replaced and its assignment read in
// the batch (checked at the version read, in its transaction), the missed
// fires are made up, and no fire of any job is lost. (The make-up runs
// here do not tell the previous life's debts from the other ways a missed
// fire is owed; TestJoinMany and TestStartJoinedInOrder follow the
// assignment read to Recover.)
func TestRestartInABatchMakesUpThePreviousLifesFires(t *testing.T) {
	needCutOff(t)
	ns := namespace(t)
	rec := newRecorder()
	cfgs := []job.Config{everySecond("again-a", 1), everySecond("again-b", 1)}
	proxy := registryProxy(t)
	// The old instance stands for another process of this host, which is
	// gone by the time the new one starts.
	host, _ := os.Hostname()
	old := startJobsOn(t, "a", viaProxy(t, proxy, regcenter.Config{Namespace: ns, SessionTimeout: 4 * time.Second}), cfgs, rec,
		job.WithProcessForTest(host, deadPID(t)))
	waitUntil(t, 30*time.Second, func() bool {
		ran := map[string]int{}
		for _, r := range rec.snapshot() {
			ran[r.job]++
		}
		return ran["again-a"] >= 2 && ran["again-b"] >= 2
	})

	// The old process goes silent and misses fires; a new one with the
	// same id starts and takes the id over while the old session has not
	// expired: the items are still assigned to the id, their statuses the
	// old session's.
	cut := time.Now()
	proxy.Block()
	time.Sleep(1500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, log := startCounted(t, ctx, ns, "a", cfgs, rec)
	time.Sleep(6 * time.Second)
	end := time.Now().Add(-3 * time.Second) // runs owed near the end may not be done
	old.crash(t)                            // it never hears from the registry again

	for _, cfg := range cfgs {
		sharding := "/" + cfg.Name + "/servers/a/sharding"
		if log.count(func(c string) bool {
			return strings.HasPrefix(c, "multi ") && strings.Contains(c+" ", " ?"+sharding+" ")
		}) == 0 {
			t.Errorf("job %s: the previous life's assignment was not read in the batch; sent:\n%s", cfg.Name, log.summary())
		}
		var recs []record
		for _, r := range rec.snapshot() {
			if r.job == cfg.Name {
				recs = append(recs, r)
			}
		}
		checkEveryFire(t, recs, cut, end, 1)
		madeUp := false
		for _, r := range byKind(recs, job.KindMisfire) {
			madeUp = madeUp || !r.fire.After(cut.Add(time.Second))
		}
		if !madeUp {
			t.Errorf("job %s: no make-up run of the fires missed after %s", cfg.Name, cut.Format("15:04:05.000"))
		}
	}
}

// startCounted starts instance id with the jobs cfgs, its registry
// wrapped in a callLog that records what Start sends, and returns it with
// the requests Start sent as the registry counts them. It is stopped when
// the test ends.
func startCounted(t *testing.T, ctx context.Context, ns, id string, cfgs []job.Config, rec *recorder) (*instance, regcenter.Stats, *callLog) {
	t.Helper()
	var log *callLog
	rc, s := connectVia(t, ctx, ns, id, func(rc regcenter.Center) regcenter.Center {
		log = &callLog{Center: rc}
		return log
	})
	for _, cfg := range cfgs {
		if err := s.Add(ctx, cfg, rec.job(id)); err != nil {
			t.Fatal(err)
		}
	}
	before := rc.Stats()
	log.on.Store(true)
	in := running(t, ctx, id, rc, s)
	log.on.Store(false)
	return in, rc.Stats().Sub(before), log
}

// startJobsOn starts instance id with the jobs cfgs on a registry of its
// own made from rcfg, stopped when the test ends.
func startJobsOn(t *testing.T, id string, rcfg regcenter.Config, cfgs []job.Config, rec *recorder, opts ...job.Option) *instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := regcenter.Open(ctx, rcfg, regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := job.NewScheduler(rc, append([]job.Option{job.WithServerID(id), job.WithLogger(testLogger(t).With("instance", id))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range cfgs {
		if err := s.Add(ctx, cfg, rec.job(id)); err != nil {
			t.Fatal(err)
		}
	}
	return running(t, ctx, id, rc, s)
}

// callLog records every call sent through it while on, as "KIND PATH…":
// "create /a", "getmany /a /b", "watchnow1 /a" (the watch's kind), and a
// transaction as "multi" and its ops, each path marked by what the op
// does: "+" create, "-" delete, "=" set, "?" check.
type callLog struct {
	regcenter.Center
	on   atomic.Bool
	mu   sync.Mutex
	sent []string
}

func (l *callLog) note(kind string, paths ...string) {
	if l.on.Load() {
		l.mu.Lock()
		l.sent = append(l.sent, kind+" "+strings.Join(paths, " "))
		l.mu.Unlock()
	}
}

func (l *callLog) Get(ctx context.Context, p string) ([]byte, regcenter.Stat, error) {
	l.note("get", p)
	return l.Center.Get(ctx, p)
}

func (l *callLog) Exists(ctx context.Context, p string) (bool, regcenter.Stat, error) {
	l.note("exists", p)
	return l.Center.Exists(ctx, p)
}

func (l *callLog) GetMany(ctx context.Context, paths ...string) ([]regcenter.NodeData, error) {
	l.note("getmany", paths...)
	return l.Center.GetMany(ctx, paths...)
}

func (l *callLog) Children(ctx context.Context, p string) ([]string, error) {
	l.note("children", p)
	return l.Center.Children(ctx, p)
}

func (l *callLog) Create(ctx context.Context, p string, data []byte, mode regcenter.Mode) (string, error) {
	l.note("create", p)
	return l.Center.Create(ctx, p, data, mode)
}

func (l *callLog) EnsurePath(ctx context.Context, p string) error {
	l.note("ensure", p)
	return l.Center.EnsurePath(ctx, p)
}

func (l *callLog) Set(ctx context.Context, p string, data []byte, version int32) (regcenter.Stat, error) {
	l.note("set", p)
	return l.Center.Set(ctx, p, data, version)
}

func (l *callLog) Delete(ctx context.Context, p string, version int32) error {
	l.note("delete", p)
	return l.Center.Delete(ctx, p, version)
}

func (l *callLog) DeleteTree(ctx context.Context, p string) error {
	l.note("deletetree", p)
	return l.Center.DeleteTree(ctx, p)
}

func (l *callLog) Multi(ctx context.Context, ops ...regcenter.Op) error {
	var paths []string
	for _, op := range ops {
		switch o := op.(type) {
		case regcenter.CreateOp:
			paths = append(paths, "+"+o.Path)
		case regcenter.SetOp:
			paths = append(paths, "="+o.Path)
		case regcenter.DeleteOp:
			paths = append(paths, "-"+o.Path)
		case regcenter.CheckOp:
			paths = append(paths, "?"+o.Path)
		}
	}
	l.note("multi", paths...)
	return l.Center.Multi(ctx, ops...)
}

func (l *callLog) Watch(p string, kind regcenter.WatchKind, fn func(regcenter.Event)) func() {
	l.note(fmt.Sprint("watch", kind), p)
	return l.Center.Watch(p, kind, fn)
}

func (l *callLog) WatchNow(ctx context.Context, p string, kind regcenter.WatchKind, fn func(regcenter.Event)) (regcenter.WatchState, func(), error) {
	l.note(fmt.Sprint("watchnow", kind), p)
	return l.Center.WatchNow(ctx, p, kind, fn)
}

var jobName = regexp.MustCompile(`/j\d\d(/|\b)`)

// summary counts the calls by kind and path, a job's name as J.
func (l *callLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	count := map[string]int{}
	for _, c := range l.sent {
		c = jobName.ReplaceAllString(c, "/J$1")
		if strings.HasPrefix(c, "multi ") || strings.HasPrefix(c, "getmany ") {
			// A group of jobs' ops or reads: count the job's once.
			seen := map[string]bool{}
			var ops []string
			for _, op := range strings.Fields(c)[1:] {
				if !seen[op] {
					seen[op] = true
					ops = append(ops, op)
				}
			}
			c = strings.Fields(c)[0] + " " + strings.Join(ops, " ")
		}
		count[c]++
	}
	var b strings.Builder
	for _, c := range slices.Sorted(maps.Keys(count)) {
		fmt.Fprintf(&b, "  %4d %s\n", count[c], c)
	}
	return b.String()
}

// count is how many of the calls sent match.
func (l *callLog) count(match func(string) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.sent {
		if match(c) {
			n++
		}
	}
	return n
}

// String lists the calls sent, one a line.
func (l *callLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.sent, "\n")
}
