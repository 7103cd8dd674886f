package job_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// A new job registers in three round trips (its tree in one transaction,
// then a watch on its config and one on its flags) and, while its next fire
// is far away, joins no election. A trigger makes the triggered instance
// join it, lead, reshard and run its items; the other instance stays out.
func TestIdleJobJoinsTheElectionWhenItRuns(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := job.Config{Name: "idle", Cron: "0 0 0 1 1 *", ShardingTotalCount: 4}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "s1")
	// The instance's own registration (its node, its watches on the
	// namespace's placement) is paid once, whatever the jobs: let it end,
	// then count what the job costs.
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	quiet(t, rc)
	before := rc.Stats()
	if err := s.Add(ctx, cfg, rec.job("s1")); err != nil {
		t.Fatal(err)
	}
	if got := rc.Stats().Sub(before); got.Total() > 3 {
		t.Errorf("registering a new job took %d requests (%+v), want 3", got.Total(), got)
	}
	in := &instance{id: "s1", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })
	startInstance(t, ns, "s2", cfg, rec)

	obs := observer(t, ns)
	latches := func() []string {
		// Made by the first candidate: absent until somebody prepares.
		kids, err := obs.Children(tctx(t), "/idle/leader/election/latch")
		if errors.Is(err, regcenter.ErrNoNode) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return kids
	}
	time.Sleep(500 * time.Millisecond)
	if l := latches(); len(l) != 0 {
		t.Fatalf("idle job: election latches %v, want none", l)
	}
	if _, err := obs.Create(tctx(t), "/idle/servers/s2/trigger", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, func() bool { return len(rec.snapshot()) >= 2 })
	time.Sleep(500 * time.Millisecond)
	recs := rec.snapshot()
	if len(recs) != 2 {
		t.Errorf("%d executions, want s2's two items", len(recs))
	}
	for _, r := range recs {
		if r.server != "s2" || r.kind != job.KindTrigger {
			t.Errorf("execution %+v, want only s2's items as a trigger", r)
		}
	}
	if l := leaderOf(t, obs, "idle"); l != "s2" {
		t.Errorf("leader %q, want s2 (the only instance in the election)", l)
	}
	if l := latches(); len(l) != 1 {
		t.Errorf("election latches %v, want s2's only", l)
	}
}

// New jobs' trees are made several to a transaction. A job that exists
// already, among new ones, is left out of it and registers node by node:
// its stored config stays in force, and the new jobs around it register
// all the same.
func TestStartRegistersNewAndExistingJobsTogether(t *testing.T) {
	ns := namespace(t)
	obs := observer(t, ns)
	stored := job.Config{Name: "b", Cron: "0 0 0 1 1 *", ShardingTotalCount: 3, Description: "stored"}.WithDefaults()
	data, err := stored.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(tctx(t), "/b/config", data, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "s1")
	for _, name := range []string{"a", "b", "c"} {
		if err := s.Add(ctx, job.Config{Name: name, Cron: "0 0 0 1 1 *", ShardingTotalCount: 2}, rec.job("s1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	in := &instance{id: "s1", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })
	for _, name := range []string{"a", "b", "c"} {
		if ok, st, err := obs.Exists(tctx(t), "/"+name+"/servers/s1/status"); err != nil || !ok || st.EphemeralOwner == 0 {
			t.Errorf("job %s: status node exists=%v (%+v, %v), want this instance's", name, ok, st, err)
		}
		if ok, _, err := obs.Exists(tctx(t), "/"+name+"/leader/sharding/necessary"); err != nil || !ok {
			t.Errorf("job %s: no reshard flagged (%v)", name, err)
		}
	}
	got, _, err := obs.Get(tctx(t), "/b/config")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(data) {
		t.Errorf("existing job's config was replaced:\n%s", got)
	}
}

// quiet waits until rc has sent no request for 300 ms.
func quiet(t *testing.T, rc regcenter.Center) {
	t.Helper()
	waitUntil(t, 10*time.Second, func() bool {
		before := rc.Stats()
		time.Sleep(300 * time.Millisecond)
		return rc.Stats().Sub(before).Total() == 0
	})
}

// A server that joins an existing job for the first time makes its server
// node and its status in one transaction: no single write (the old path
// cleared a shutdown flag that could not exist, and made the two nodes
// one at a time, then read an assignment that could not exist either),
// and no transaction of new trees tried for a job that exists. Started
// again under the same id, it finds its server node, and makes its status
// in a transaction all the same (registration.JoinMany), not node by
// node.
func TestAServerJoiningAJobMakesItsNodesInOneTransaction(t *testing.T) {
	ns := namespace(t)
	obs := observer(t, ns)
	names := []string{"a", "b", "c"}
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfgs := make([]job.Config, len(names))
	for i, name := range names {
		cfgs[i] = job.Config{Name: name, Cron: "0 0 0 1 1 *", ShardingTotalCount: 2}
	}
	start := func(id string) (*instance, *callLog) {
		in, _, log := startCounted(t, ctx, ns, id, cfgs, rec)
		for _, name := range names {
			if ok, st, err := obs.Exists(tctx(t), "/"+name+"/servers/"+id+"/status"); err != nil || !ok || st.EphemeralOwner == 0 {
				t.Errorf("job %s: %s's status node exists=%v (%+v, %v)", name, id, ok, st, err)
			}
		}
		return in, log
	}
	start("s1")
	s2, joined := start("s2")
	for _, name := range names {
		server, status := "/"+name+"/servers/s2", "/"+name+"/servers/s2/status"
		// Transactions sent side by side may go as one (the scheduler
		// groups them, and sends them apart when the group fails): the
		// job's two creates are together.
		if got := joined.count(func(c string) bool {
			return strings.HasPrefix(c, "multi ") && strings.Contains(c+" ", " +"+server+" +"+status+" ")
		}); got == 0 {
			t.Errorf("job %s: no transaction of s2's server node and status; sent:\n%s", name, joined)
		}
		if got := joined.count(func(c string) bool {
			return c == "create "+server || c == "create "+status || c == "delete "+server+"/shutdown"
		}); got != 0 {
			t.Errorf("job %s: %d single writes of s2's nodes, want none; sent:\n%s", name, got, joined)
		}
		if got := joined.count(func(c string) bool { return strings.HasPrefix(c, "multi ") && strings.Contains(c+" ", " +/"+name+" ") }); got != 0 {
			t.Errorf("job %s: a new tree was tried for it; sent:\n%s", name, joined)
		}
	}
	s2.stop(t)
	_, again := start("s2")
	for _, name := range names {
		server, status := "/"+name+"/servers/s2", "/"+name+"/servers/s2/status"
		if got := again.count(func(c string) bool {
			return strings.HasPrefix(c, "multi ") && strings.Contains(c+" ", " +"+status+" ") && !strings.Contains(c+" ", " +"+server+" ")
		}); got == 0 {
			t.Errorf("s2 started again: job %s: no transaction of its status alone (its server node exists); sent:\n%s", name, again)
		}
		if got := again.count(func(c string) bool { return c == "create "+status || c == "create "+server }); got != 0 {
			t.Errorf("s2 started again: job %s: %d single writes of its nodes, want none; sent:\n%s", name, got, again)
		}
	}
}

// firstMarks wraps a registry and counts what an instance's first mark of
// an item whose execution node is missing costs: marking transactions
// refused for a missing node, and reads of the execution node's children.
type firstMarks struct {
	regcenter.Center
	refused, listed atomic.Int32
}

func (f *firstMarks) Multi(ctx context.Context, ops ...regcenter.Op) error {
	err := f.Center.Multi(ctx, ops...)
	var me *regcenter.MultiError
	if errors.As(err, &me) && errors.Is(me.Err, regcenter.ErrNoNode) && me.Index < len(ops) &&
		strings.HasSuffix(job.WrittenPath(ops[me.Index]), "/running") {
		f.refused.Add(1)
	}
	return err
}

func (f *firstMarks) Children(ctx context.Context, p string) ([]string, error) {
	if strings.HasSuffix(p, "/execution") {
		f.listed.Add(1)
	}
	return f.Center.Children(ctx, p)
}

// SessionTimeout forwards the wrapped registry's, which the scheduler reads.
func (f *firstMarks) SessionTimeout() time.Duration { return sessionTimeoutOf(f.Center) }

// A new job about to fire is registered with its items' execution nodes,
// so that each instance's first mark of its items goes through at once
// (as a fleet starts, a refused transaction, a read and a transaction more
// on every instance made its first fires late). Two instances start; once
// every item has run, and b has run one, no marking transaction was
// refused for a missing node and nobody listed the execution node.
func TestNewJobsItemNodesComeWithItsTree(t *testing.T) {
	ns := namespace(t)
	cfg := everySecond("soon", 3)
	type run struct {
		server string
		item   int
	}
	ran := make(chan run, 64)
	jobOf := func(server string) job.Job {
		return job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
			select {
			case ran <- run{server, sc.Item}:
			default:
			}
			return nil
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ca, cb := &firstMarks{}, &firstMarks{}
	via := func(f *firstMarks) func(regcenter.Center) regcenter.Center {
		return func(rc regcenter.Center) regcenter.Center { f.Center = rc; return f }
	}
	rcA, sA := connectVia(t, ctx, ns, "a", via(ca))
	if err := sA.Add(ctx, cfg, jobOf("a")); err != nil {
		t.Fatal(err)
	}
	running(t, ctx, "a", rcA, sA)
	p := layout.Job("soon")
	for it := range cfg.ShardingTotalCount {
		if ok, _, err := rcA.Exists(ctx, p.Item(it)); err != nil || !ok {
			t.Fatalf("item %d's execution node after the first Start: exists=%t err=%v", it, ok, err)
		}
	}
	rcB, sB := connectVia(t, ctx, ns, "b", via(cb))
	if err := sB.Add(ctx, cfg, jobOf("b")); err != nil {
		t.Fatal(err)
	}
	running(t, ctx, "b", rcB, sB)
	// Every item run, and b too has run one (its own first mark made).
	items, servers := map[int]bool{}, map[string]bool{}
	for len(items) < cfg.ShardingTotalCount || !servers["b"] {
		select {
		case r := <-ran:
			items[r.item], servers[r.server] = true, true
		case <-ctx.Done():
			t.Fatalf("items run: %v, by %v: want all %d, and some by b", items, servers, cfg.ShardingTotalCount)
		}
	}
	for _, c := range []struct {
		id string
		f  *firstMarks
	}{{"a", ca}, {"b", cb}} {
		if r, l := c.f.refused.Load(), c.f.listed.Load(); r != 0 || l != 0 {
			t.Errorf("%s: %d marking transactions refused for a missing node, %d reads of the execution node: want none", c.id, r, l)
		}
	}
}
