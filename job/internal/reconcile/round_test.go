package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcd"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// registries are the registries the rounds' tests run on, by name: what
// they check is each registry's to keep (the stats a round compares).
// ZooKeeper and an etcd member (in this process), each started for the
// test; PostgreSQL and the embedded default keep the same stats by the
// same contract (regcenter/centertest).
var registries = map[string]func(tb testing.TB, namespace string) (context.Context, regcenter.Center){
	"zookeeper": func(tb testing.TB, ns string) (context.Context, regcenter.Center) { return roomtest.ZooKeeper(tb, ns) },
	"etcd": func(tb testing.TB, ns string) (context.Context, regcenter.Center) {
		tb.Helper()
		cluster := etcdtest.Start(tb)
		ctx, cancel := context.WithTimeout(context.Background(), roomtest.Timeout)
		tb.Cleanup(cancel)
		rc, err := etcd.Open(ctx, regcenter.Config{Etcd: cluster.Endpoints(), Namespace: ns}, regcenter.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = rc.Close() })
		return ctx, rc
	},
}

// TestLeaderRoundReadsOnceWhileNothingChanged: on each registry, a
// leader's round with what its last clean check read (Seen) costs two
// requests while none of it changed (its nodes, and the load table's
// stat), and checks again — finding the fault
// where there is one — after each kind of change its checks read: an
// assignment edited by hand, a server disabled, a server joining, the
// item count, an instance drained. Counted in requests, not timed.
func TestLeaderRoundReadsOnceWhileNothingChanged(t *testing.T) {
	for name, open := range registries {
		t.Run(name, func(t *testing.T) { testLeaderRoundReadsOnce(t, open) })
	}
}

func testLeaderRoundReadsOnce(t *testing.T, open func(testing.TB, string) (context.Context, regcenter.Center)) {
	ctx, rc := open(t, "roundseen")
	paths := layout.Job("j")
	roomtest.Put(t, ctx, rc, paths.ElectionHost(), []byte("s0"))
	roomtest.Put(t, ctx, rc, paths.ShardingEpoch(), nil)
	// The drain list there already: an entry changes only its children.
	if err := rc.EnsurePath(ctx, layout.DrainList); err != nil {
		t.Fatal(err)
	}
	for sv, items := range map[string]string{"s0": "0", "s1": "1"} {
		roomtest.Put(t, ctx, rc, paths.Flag(sv, layout.Status), nil)
		roomtest.Put(t, ctx, rc, paths.Flag(sv, layout.Sharding), []byte(items))
	}
	flags, repairs, verified := 0, 0, 0
	var repairErr error
	total := 2
	seen := &Seen{}
	round := func() (requests int64) {
		t.Helper()
		sess := rc.Session()
		before := rc.Stats()
		(&Round{RC: rc, Paths: paths, Server: "s0", Life: ctx, Timeout: 10 * time.Second,
			Registered:    func() (*regcenter.Session, bool) { return sess, false },
			Behind:        func(context.Context) {},
			Reregister:    func(*regcenter.Session) { t.Error("re-registered under its own session") },
			Prepared:      func() bool { return true },
			RestoreStatus: func(context.Context, *regcenter.Session) { t.Error("restored a status node that is there") },
			Campaign:      func(context.Context) error { t.Error("campaigned under a leader"); return nil },
			VerifyHolds: func(*regcenter.Session) ([]string, func([]regcenter.NodeData)) {
				return nil, func([]regcenter.NodeData) { verified++ }
			},
			IsLeader: func() bool { return true },
			Assignment: Assignment{RC: rc, Paths: paths, Name: "j", Total: total, Log: slog.New(slog.DiscardHandler),
				QueueDeparted: func(context.Context, reshard.Servers) error { return nil },
				Flag:          func(context.Context) { flags++ }},
			RepairBooks: func(context.Context) error { repairs++; return repairErr },
			Seen:        seen, Log: slog.New(slog.DiscardHandler),
		}).Run()
		return rc.Stats().Sub(before).Total()
	}
	// settle runs the rounds that follow a change until one skips: the
	// first checks (and finds what it finds), later ones check until the
	// stats they read before a clean check are kept.
	type outcome struct{ checks, flags int }
	settle := func(what string) outcome {
		t.Helper()
		f0, r0 := flags, repairs
		for n := 1; n <= 4; n++ {
			r := repairs
			got := round()
			if repairs == r { // skipped
				if got != 2 {
					t.Errorf("%s: a round that skipped its checks sent %d requests, want 2", what, got)
				}
				return outcome{checks: repairs - r0, flags: flags - f0}
			}
			if got < 5 {
				t.Errorf("%s: a round that checked sent %d requests: it read less than its checks need", what, got)
			}
		}
		t.Fatalf("%s: four rounds in a row checked, none skipped (flags %d)", what, flags-f0)
		return outcome{}
	}
	// A round that finds a fault keeps checking each round while it stands.
	faulted := func(what string) {
		t.Helper()
		f0 := flags
		for range 2 {
			r := repairs
			round()
			if repairs == r {
				t.Fatalf("%s: a round skipped its checks", what)
			}
		}
		if flags-f0 != 2 {
			t.Errorf("%s: %d reshards flagged in two rounds, want 2 (the fault stands)", what, flags-f0)
		}
	}

	if o := settle("the first rounds"); o.flags != 0 || o.checks != 1 {
		t.Errorf("the first rounds: %+v, want one check (the servers listed, their stats kept), no flag", o)
	}
	for range 3 {
		if got := round(); got != 2 {
			t.Errorf("an unchanged round sent %d requests, want 2", got)
		}
	}

	// An assignment edited by hand: item 0 held twice.
	roomtest.Put(t, ctx, rc, paths.Flag("s1", layout.Sharding), []byte("0,1"))
	faulted("item 0 held twice")
	roomtest.Put(t, ctx, rc, paths.Flag("s1", layout.Sharding), []byte("1"))
	if o := settle("the assignment put right"); o.flags != 0 {
		t.Errorf("the assignment put right: %+v, want no flag", o)
	}

	// A server disabled: its item is on a server that may not hold it.
	roomtest.Put(t, ctx, rc, paths.Flag("s1", layout.Disabled), nil)
	faulted("s1 disabled")
	if err := rc.Delete(ctx, paths.Flag("s1", layout.Disabled), -1); err != nil {
		t.Fatal(err)
	}
	if o := settle("s1 enabled"); o.flags != 0 {
		t.Errorf("s1 enabled: %+v, want no flag", o)
	}

	// A server joining holding nothing: a valid placement stands (the
	// leader's membership watch reshards for it), but the round checks;
	// its check found a server it had no stats of, so the next round
	// checks too, with them.
	roomtest.Put(t, ctx, rc, paths.Flag("s2", layout.Status), nil)
	if o := settle("s2 joined"); o.flags != 0 || o.checks != 2 {
		t.Errorf("s2 joined: %+v, want two checks, no flag", o)
	}
	roomtest.Put(t, ctx, rc, paths.Flag("s2", layout.Sharding), []byte("1"))
	faulted("s2 given item 1 by hand, which s1 holds")
	if err := rc.Delete(ctx, paths.Flag("s2", layout.Sharding), -1); err != nil {
		t.Fatal(err)
	}
	settle("s2's assignment removed")

	// The item count: item 2 is held by nobody.
	total = 3
	faulted("three items, two placed")
	total = 2
	settle("two items again")

	// A repair of the books that failed: nothing kept, the next round
	// checks again. (The same bytes written again move the node's
	// version: the round checks.)
	roomtest.Put(t, ctx, rc, paths.Flag("s1", layout.Sharding), []byte("1"))
	repairErr = errors.New("the table could not be written")
	r := repairs
	round()
	repairErr = nil
	if o := settle("after a failed repair"); repairs-r != 2 || o.checks != 1 {
		t.Errorf("after a failed repair: %d checks, want 2 (the failed one's, and the next round's)", repairs-r)
	}

	// An instance drained, namespace-wide.
	roomtest.Put(t, ctx, rc, layout.Drain("s1"), nil)
	faulted("s1 drained")
	if err := rc.Delete(ctx, layout.Drain("s1"), -1); err != nil {
		t.Fatal(err)
	}
	settle("s1 back from the drain")
	if verified == 0 {
		t.Error("no round verified the marks it holds")
	}
}

// TestPassReadsEveryJobTogether: the rounds of many jobs led here, due in
// one pass, read their nodes in one GetMany (with the load table's stat
// in one request more) while nothing changed; a change to one job's nodes has that
// job's round check, and only it.
func TestPassReadsEveryJobTogether(t *testing.T) {
	for name, open := range registries {
		t.Run(name, func(t *testing.T) { testPassReadsEveryJobTogether(t, open) })
	}
}

func testPassReadsEveryJobTogether(t *testing.T, open func(testing.TB, string) (context.Context, regcenter.Center)) {
	ctx, rc := open(t, "passseen")
	const jobs = 40
	checks := make([]int, jobs)
	seen := make([]*Seen, jobs)
	for i := range jobs {
		paths := layout.Job(fmt.Sprintf("j%02d", i))
		roomtest.Put(t, ctx, rc, paths.ElectionHost(), []byte("s0"))
		roomtest.Put(t, ctx, rc, paths.ShardingEpoch(), nil)
		roomtest.Put(t, ctx, rc, paths.Flag("s0", layout.Status), nil)
		roomtest.Put(t, ctx, rc, paths.Flag("s0", layout.Sharding), []byte("0,1"))
		seen[i] = &Seen{}
	}
	quiet := slog.New(slog.DiscardHandler)
	pass := func() int64 {
		t.Helper()
		before := rc.Stats()
		var rounds []*Round
		for i := range jobs {
			paths := layout.Job(fmt.Sprintf("j%02d", i))
			r := &Round{RC: rc, Paths: paths, Server: "s0", Life: ctx, Timeout: 10 * time.Second,
				Registered:    func() (*regcenter.Session, bool) { return rc.Session(), false },
				Behind:        func(context.Context) {},
				Reregister:    func(*regcenter.Session) {},
				Prepared:      func() bool { return true },
				RestoreStatus: func(context.Context, *regcenter.Session) { t.Errorf("%s: restored a status node that is there", paths) },
				Campaign:      func(context.Context) error { t.Errorf("%s: campaigned under a leader", paths); return nil },
				VerifyHolds: func(*regcenter.Session) ([]string, func([]regcenter.NodeData)) {
					return nil, func([]regcenter.NodeData) {}
				},
				IsLeader: func() bool { return true },
				Assignment: Assignment{RC: rc, Paths: paths, Name: string(paths), Total: 2, Log: quiet,
					QueueDeparted: func(context.Context, reshard.Servers) error { return nil },
					Flag:          func(context.Context) { t.Errorf("%s: flagged a reshard of a right assignment", paths) }},
				RepairBooks: func(context.Context) error { checks[i]++; return nil },
				Seen:        seen[i], Log: quiet,
			}
			if !r.Begin() {
				t.Fatalf("%s: the round did not begin", paths)
			}
			rounds = append(rounds, r)
		}
		Pass(rc, 10*time.Second, rounds)
		return rc.Stats().Sub(before).Total()
	}
	first := pass()
	for i, n := range checks {
		if n != 1 {
			t.Fatalf("the first pass checked j%02d %d times, want 1", i, n)
		}
	}
	// What one GetMany of every path the pass reads costs on this
	// registry (one request on ZooKeeper; on etcd, a read transaction per
	// some forty nodes).
	all := slices.Clone(sharedPaths)
	for i := range jobs {
		paths := layout.Job(fmt.Sprintf("j%02d", i))
		all = append(all, paths.Flag("s0", layout.Status), paths.ElectionHost())
		all = append(all, jobPaths(paths, []string{"s0"})...)
	}
	before := rc.Stats()
	if _, err := rc.GetMany(ctx, all...); err != nil {
		t.Fatal(err)
	}
	one := rc.Stats().Sub(before).Total()
	for range 2 {
		if got := pass(); got != one+1 {
			t.Errorf("a pass over %d unchanged jobs sent %d requests, want %d: one GetMany of its %d paths (%d) and the table's stat (the first pass: %d)", jobs, got, one+1, len(all), one, first)
		}
	}
	roomtest.Put(t, ctx, rc, layout.Job("j07").Flag("s0", layout.Sharding), []byte("1,0"))
	pass()
	for i, n := range checks {
		if want := map[bool]int{true: 2, false: 1}[i == 7]; n != want {
			t.Errorf("after j07's assignment was written: j%02d checked %d times, want %d", i, n, want)
		}
	}
}
