package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
)

// These tests drive every operator flag through the command against three
// running instances and check what actually executes.

func TestAdminDisableEnable(t *testing.T) {
	t.Parallel()
	c := newCluster(t, everySecond("orders"), "")
	c.warmUp()

	out := c.mustCLI("disable", "s2", "--job", "orders")
	if !strings.Contains(out, "s2 disabled in job orders") {
		t.Errorf("disable output:\n%s", out)
	}
	at := time.Now()
	fires, byFire := c.rec.waitFires(t, at.Add(time.Second), 3, allSix)
	for _, f := range fires {
		by := checkFire(t, f, byFire[f], allSix)
		if by["s2"] != nil {
			t.Errorf("fire %s: disabled s2 ran items %v", f.Format("15:04:05"), by["s2"])
		}
		if len(by) != 2 {
			t.Errorf("fire %s: items ran on %v, want s1 and s3", f.Format("15:04:05"), by)
		}
	}
	st := c.status()
	if s2 := serverOf(st, "s2"); !s2.Disabled || !s2.Online || len(s2.Items) != 0 {
		t.Errorf("status of disabled s2: %+v", s2)
	}
	if out := c.mustCLI("status", "orders"); !strings.Contains(out, "disabled") {
		t.Errorf("status text does not show the disabled flag:\n%s", out)
	}
	// Disabling twice changes nothing and says so.
	if out := c.mustCLI("disable", "s2", "--job", "orders"); !strings.Contains(out, "already disabled") {
		t.Errorf("second disable:\n%s", out)
	}

	out = c.mustCLI("enable", "s2", "--job", "orders")
	if !strings.Contains(out, "s2 enabled in job orders") {
		t.Errorf("enable output:\n%s", out)
	}
	at = time.Now()
	fires, byFire = c.rec.waitFires(t, at.Add(time.Second), 2, allSix)
	for _, f := range fires {
		if by := checkFire(t, f, byFire[f], allSix); len(by["s2"]) == 0 {
			t.Errorf("fire %s: enabled s2 ran nothing: %v", f.Format("15:04:05"), by)
		}
	}
}

func TestAdminPauseResume(t *testing.T) {
	t.Parallel()
	c := newCluster(t, everySecond("orders"), "")
	c.warmUp()
	mine := serverOf(c.status(), "s1").Items
	if len(mine) == 0 {
		t.Fatalf("s1 holds no items before the pause")
	}
	var rest []int
	for _, it := range allSix {
		if !slices.Contains(mine, it) {
			rest = append(rest, it)
		}
	}

	c.mustCLI("pause", "s1", "--job", "orders")
	at := time.Now()
	from := at.Add(time.Second)
	fires, byFire := c.rec.waitFires(t, from, 3, rest)
	for _, f := range fires {
		checkFire(t, f, byFire[f], rest) // s1's items do not run anywhere
	}
	for _, e := range c.rec.matching(func(e execRec) bool { return !e.fire.Before(from) }) {
		if e.server == "s1" || slices.Contains(mine, e.item) {
			t.Errorf("while s1 is paused: item %d ran on %s (%s, fire %s)", e.item, e.server, e.kind, e.fire.Format("15:04:05"))
		}
	}
	s1 := serverOf(c.status(), "s1")
	if !s1.Paused || !slices.Equal(s1.Items, mine) {
		t.Errorf("paused s1 should keep its items %v: %+v", mine, s1)
	}

	c.mustCLI("resume", "s1", "--job", "orders")
	at = time.Now()
	fires, byFire = c.rec.waitFires(t, at.Add(time.Second), 2, allSix)
	for _, f := range fires {
		if by := checkFire(t, f, byFire[f], allSix); !slices.Equal(by["s1"], mine) {
			t.Errorf("fire %s after resume: s1 ran %v, want %v", f.Format("15:04:05"), by["s1"], mine)
		}
	}
}

func TestAdminTrigger(t *testing.T) {
	t.Parallel()
	// Fires on January 1st only: every execution here is a trigger.
	c := newCluster(t, job.Config{Name: "report", Cron: "0 0 0 1 1 *", ShardingTotalCount: 6}, "")

	out := c.mustCLI("trigger", "report")
	if !strings.Contains(out, "triggered report on s1, s2, s3") {
		t.Errorf("trigger output:\n%s", out)
	}
	waitFor(t, 30*time.Second, "six triggered executions", func() bool { return len(c.rec.all()) >= 6 })
	waitFor(t, 30*time.Second, "the trigger to finish", c.idle)
	recs := c.rec.all()
	count := map[int]int{}
	s3 := []int{}
	for _, e := range recs {
		if e.kind != job.KindTrigger {
			t.Errorf("item %d ran as %q, want trigger", e.item, e.kind)
		}
		count[e.item]++
		if e.server == "s3" {
			s3 = append(s3, e.item)
		}
	}
	for _, it := range allSix {
		if count[it] != 1 {
			t.Errorf("job-wide trigger: item %d ran %d times, want once", it, count[it])
		}
	}
	if len(recs) != 6 || len(s3) == 0 {
		t.Fatalf("job-wide trigger ran %d executions (s3: %v), want 6 over every server", len(recs), s3)
	}
	slices.Sort(s3)

	out = c.mustCLI("trigger", "report", "--server", "s3")
	if !strings.Contains(out, "triggered report on s3") {
		t.Errorf("trigger --server output:\n%s", out)
	}
	waitFor(t, 30*time.Second, "s3's triggered executions", func() bool { return len(c.rec.all()) >= 6+len(s3) })
	waitFor(t, 30*time.Second, "the trigger to finish", c.idle)
	var again []int
	for _, e := range c.rec.all()[6:] {
		if e.server != "s3" || e.kind != job.KindTrigger {
			t.Errorf("trigger --server s3: item %d ran on %s as %s", e.item, e.server, e.kind)
		}
		again = append(again, e.item)
	}
	slices.Sort(again)
	if !slices.Equal(again, s3) {
		t.Errorf("trigger --server s3 ran items %v, want s3's items %v once each", again, s3)
	}

	c.wantFail(exitUnknown, []string{`unknown server "s9"`, "report"}, "trigger", "report", "--server", "s9")
	c.wantFail(exitUnknown, []string{`unknown job "nope"`}, "trigger", "nope")
	// A mistyped name says which job was meant.
	c.wantFail(exitUnknown, []string{`unknown job "reprot"`, `(did you mean "report"?)`}, "status", "reprot")
	c.wantFail(exitUnknown, []string{`unknown job "Report"`, `(did you mean "report"?)`}, "trigger", "Report")
}

func TestAdminShutdown(t *testing.T) {
	t.Parallel()
	c := newCluster(t, everySecond("orders"), "")
	c.warmUp()

	out := c.mustCLI("shutdown", "s1", "--job", "orders", "--wait", "20s")
	if !strings.Contains(out, "s1 has left orders") {
		t.Errorf("shutdown output:\n%s", out)
	}
	waitFor(t, 10*time.Second, "s1's scheduler to drop the job", func() bool { return !c.inst["s1"].runs("orders") })
	if !c.inst["s2"].runs("orders") || !c.inst["s3"].runs("orders") {
		t.Errorf("s2 and s3 must keep the job: %v %v", c.inst["s2"].sched.Jobs(), c.inst["s3"].sched.Jobs())
	}
	at := time.Now()
	fires, byFire := c.rec.waitFires(t, at.Add(time.Second), 3, allSix)
	for _, f := range fires {
		by := checkFire(t, f, byFire[f], allSix)
		if by["s1"] != nil || len(by) != 2 {
			t.Errorf("fire %s after s1 left: items ran on %v, want s2 and s3 only", f.Format("15:04:05"), by)
		}
	}
	if late := c.rec.matching(func(e execRec) bool { return e.server == "s1" && e.at.After(at) }); len(late) > 0 {
		t.Errorf("s1 ran items after it left: %v", late)
	}
	s1 := serverOf(c.status(), "s1")
	if s1.Online || !s1.ShutdownPending {
		t.Errorf("status of s1 after shutdown: %+v", s1)
	}
	c.wantFail(exitFailed, []string{`server "s1" is not online in job "orders"`}, "shutdown", "s1", "--job", "orders")
	c.wantFail(exitUnknown, []string{`unknown server "s7"`}, "shutdown", "s7")
}

func TestAdminDisableItem(t *testing.T) {
	t.Parallel()
	c := newCluster(t, everySecond("orders"), "")
	c.warmUp()

	out := c.mustCLI("disable-item", "orders", "3", "5")
	if !strings.Contains(out, "items 3,5 are disabled") {
		t.Errorf("disable-item output:\n%s", out)
	}
	at := time.Now()
	from := at.Add(time.Second)
	fires, byFire := c.rec.waitFires(t, from, 3, []int{0, 1, 2, 4})
	for _, f := range fires {
		checkFire(t, f, byFire[f], []int{0, 1, 2, 4})
	}
	for _, e := range c.rec.matching(func(e execRec) bool { return !e.fire.Before(from) }) {
		if e.item == 3 || e.item == 5 {
			t.Errorf("disabled item %d ran on %s (fire %s)", e.item, e.server, e.fire.Format("15:04:05"))
		}
	}
	if st := c.status(); !slices.Equal(st.DisabledItems, []int{3, 5}) {
		t.Errorf("status disabled items %v, want [3 5]", st.DisabledItems)
	}

	out = c.mustCLI("enable-item", "orders", "3")
	if !strings.Contains(out, "items 5 are disabled") {
		t.Errorf("enable-item output:\n%s", out)
	}
	at = time.Now()
	fires, byFire = c.rec.waitFires(t, at.Add(time.Second), 2, []int{0, 1, 2, 3, 4})
	for _, f := range fires {
		checkFire(t, f, byFire[f], []int{0, 1, 2, 3, 4})
	}

	c.wantFail(exitUsage, []string{"item 9 is outside", "0..5"}, "disable-item", "orders", "9")
	c.wantFail(exitUsage, []string{`item "x"`}, "disable-item", "orders", "x")
	c.wantFail(exitUsage, []string{"ITEM"}, "disable-item", "orders")
	c.wantFail(exitUnknown, []string{`unknown job "nope"`}, "enable-item", "nope", "1")
}

func TestAdminConfigSet(t *testing.T) {
	t.Parallel()
	c := newCluster(t, job.Config{Name: "report", Cron: "0 0 0 1 1 *", ShardingTotalCount: 6}, "")

	// From a yearly cron to every second: measure how long until each
	// instance runs the new schedule.
	every := writeFile(t, "every.yaml", "name: report\ncron: \"* * * * * *\"\nshardingTotalCount: 6\n")
	set := time.Now()
	out := c.mustCLI("config", "set", "report", every)
	if !strings.Contains(out, "config of report updated") {
		t.Errorf("config set output:\n%s", out)
	}
	for _, id := range []string{"s1", "s2", "s3"} {
		waitFor(t, 30*time.Second, id+" to run the new schedule", func() bool {
			return len(c.rec.matching(func(e execRec) bool { return e.server == id })) > 0
		})
		first := c.rec.matching(func(e execRec) bool { return e.server == id })[0]
		t.Logf("%s ran its first fire of the new cron %v after config set", id, first.at.Sub(set).Round(time.Millisecond))
	}
	if got := c.mustCLI("config", "get", "report"); !strings.Contains(got, `cron: '* * * * * *'`) {
		t.Errorf("config get after set:\n%s", got)
	}

	// Every three seconds: after a short while no instance fires on other
	// seconds any more.
	third := writeFile(t, "third.yaml", "name: report\ncron: \"*/3 * * * * *\"\nshardingTotalCount: 6\n")
	set = time.Now()
	c.mustCLI("config", "set", "report", third)
	c.rec.waitFires(t, set.Add(time.Second), 2, allSix)
	for _, id := range []string{"s1", "s2", "s3"} {
		var lastOld time.Time
		for _, e := range c.rec.matching(func(e execRec) bool { return e.server == id && e.kind == job.KindFire }) {
			if e.fire.Second()%3 != 0 && e.fire.After(lastOld) {
				lastOld = e.fire
			}
		}
		t.Logf("%s: last fire on the old schedule %v after config set", id, lastOld.Sub(set).Round(time.Millisecond))
		if lastOld.After(set.Add(5 * time.Second)) {
			t.Errorf("%s still fired on the old schedule at %s, config set at %s", id, lastOld.Format("15:04:05"), set.Format("15:04:05.000"))
		}
	}

	// Garbage is refused and never written.
	before := c.mustCLI("config", "get", "report")
	typo := writeFile(t, "typo.yaml", "name: report\ncron: \"*/3 * * * * *\"\nshardingTotalcount: 6\n")
	c.wantFail(exitUsage, []string{"typo.yaml", `unknown key "shardingTotalcount" at line 3`, `did you mean "shardingTotalCount"`}, "config", "set", "report", typo)
	broken := writeFile(t, "broken.yaml", "name: report\ncron: [\n")
	c.wantFail(exitUsage, []string{"broken.yaml", "invalid YAML", "line"}, "config", "set", "report", broken)
	badCron := writeFile(t, "cron.yaml", "name: report\ncron: \"*/5 * * * *\"\nshardingTotalCount: 6\n")
	c.wantFail(exitUsage, []string{`cron "*/5 * * * *" at line 2`}, "config", "set", "report", badCron)
	other := writeFile(t, "other.yaml", "name: other\ncron: \"*/3 * * * * *\"\nshardingTotalCount: 6\n")
	c.wantFail(exitUsage, []string{`names job "other", not "report"`}, "config", "set", "report", other)
	c.wantFail(exitUsage, []string{"no-such.yaml"}, "config", "set", "report", t.TempDir()+"/no-such.yaml")
	c.wantFail(exitUnknown, []string{`unknown job "nope"`}, "config", "set", "nope", third)
	if after := c.mustCLI("config", "get", "report"); after != before {
		t.Errorf("a refused config was written:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestAdminConfigNodeGarbage(t *testing.T) {
	t.Parallel()
	c := newCluster(t, everySecond("orders"), "")
	c.warmUp()

	// Straight into the node, past the command's validation.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.inst["s2"].rc.Set(ctx, layout.Job("orders").Config(), []byte("name: orders\ncron: [\n"), -1); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	fires, byFire := c.rec.waitFires(t, at.Add(time.Second), 3, allSix)
	for _, f := range fires {
		if by := checkFire(t, f, byFire[f], allSix); len(by) != 3 {
			t.Errorf("fire %s with garbage in the config node: items ran on %v, want all three", f.Format("15:04:05"), by)
		}
	}
	out := c.mustCLI("jobs")
	if !strings.Contains(out, "orders: config node rejected") {
		t.Errorf("jobs does not report the rejected config:\n%s", out)
	}
	var jobs []admin.JobSummary
	if err := json.Unmarshal([]byte(c.mustCLI("jobs", "-o", "json")), &jobs); err != nil || len(jobs) != 1 || jobs[0].ConfigError == "" {
		t.Errorf("jobs JSON with garbage config: %+v (%v)", jobs, err)
	}

	good := writeFile(t, "good.yaml", "name: orders\ncron: \"* * * * * *\"\nshardingTotalCount: 6\n")
	c.mustCLI("config", "set", "orders", good)
	jobs = nil
	if err := json.Unmarshal([]byte(c.mustCLI("jobs", "-o", "json")), &jobs); err != nil || len(jobs) != 1 || jobs[0].ConfigError != "" || jobs[0].Cron != "* * * * * *" {
		t.Errorf("jobs JSON after a good config: %+v (%v)", jobs, err)
	}
}

func TestAdminRemove(t *testing.T) {
	t.Parallel()
	c := newCluster(t, everySecond("orders"), "")
	c.warmUp()

	out := c.mustCLI("remove", "orders")
	if !strings.Contains(out, "removed job orders: s1, s2, s3 stopped it") {
		t.Errorf("remove output:\n%s", out)
	}
	done := time.Now()
	for id, in := range c.inst {
		waitFor(t, 10*time.Second, id+" to stop the job", func() bool { return !in.runs("orders") })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ok, _, err := c.inst["s1"].rc.Exists(ctx, layout.Job("orders").Root()); err != nil || ok {
		t.Errorf("job node after remove: exists %v, err %v", ok, err)
	}
	if late := c.rec.matching(func(e execRec) bool { return e.at.After(done) }); len(late) > 0 {
		t.Errorf("executions after remove: %v", late)
	}
	if out := c.mustCLI("jobs"); !strings.Contains(out, "no jobs in namespace") {
		t.Errorf("jobs after remove:\n%s", out)
	}
	c.wantFail(exitUnknown, []string{`unknown job "orders"`}, "status", "orders")
	c.wantFail(exitUnknown, []string{`unknown job "orders"`}, "remove", "orders")
}

func TestAdminReadCommands(t *testing.T) {
	t.Parallel()
	c := newCluster(t, everySecond("orders"), "")
	c.warmUp()

	out := c.mustCLI("jobs")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "JOB ") {
		t.Fatalf("jobs:\n%s", out)
	}
	if f := strings.Fields(lines[1]); f[0] != "orders" || f[1] != "ok" || !strings.Contains(lines[1], " 3/3 ") {
		t.Errorf("jobs row: %q", lines[1])
	}
	// The same through the regcenter section of a job file.
	file := writeFile(t, "jobs.yaml", fmt.Sprintf("regcenter:\n  servers: [%s]\n  namespace: %s\njobs: []\n", strings.Join(zc.Servers(), ", "), c.ns))
	if code, fromFile, errOut := runCLI("jobs", "--config", file); code != 0 || !strings.Contains(fromFile, "orders") || !strings.Contains(fromFile, " 3/3 ") {
		t.Errorf("jobs --config: exit %d %q\n%s", code, errOut, fromFile)
	}
	var jobs []admin.JobSummary
	if err := json.Unmarshal([]byte(c.mustCLI("jobs", "--output", "json")), &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("jobs JSON: %+v", jobs)
	}
	j := jobs[0]
	if j.Name != "orders" || j.Status != admin.StatusOK || j.Online != 3 || j.Registered != 3 || j.ShardingTotalCount != 6 ||
		!slices.Contains([]string{"s1", "s2", "s3"}, j.Leader) || j.LastFire == nil || j.NextFire == nil || !j.NextFire.After(*j.LastFire) {
		t.Errorf("jobs JSON: %+v", j)
	}

	st := c.status()
	if len(st.Servers) != 3 || len(st.Items) != 6 {
		t.Fatalf("status: %d servers, %d items", len(st.Servers), len(st.Items))
	}
	assigned := 0
	for _, s := range st.Servers {
		if !s.Online || s.State == "" {
			t.Errorf("server %+v should be online", s)
		}
		assigned += len(s.Items)
	}
	for _, it := range st.Items {
		if it.Last == nil || it.Last.Kind != "fire" || it.Server == "" || it.Last.Error != "" {
			t.Errorf("item %+v", it)
		}
	}
	if assigned != 6 {
		t.Errorf("%d items assigned over the servers, want 6", assigned)
	}
	text := c.mustCLI("status", "orders")
	for _, want := range []string{"job:", "orders", "status:", "SERVER", "ITEM", "leader", "s1", "s2", "s3", "fire"} {
		if !strings.Contains(text, want) {
			t.Errorf("status text lacks %q:\n%s", want, text)
		}
	}

	dump := c.mustCLI("dump", "orders")
	for _, want := range []string{"/orders/config  [v", "    cron: '* * * * * *'", "/orders/servers/s1/status  [v0 ephemeral 0x", "/orders/execution/0/completed"} {
		if !strings.Contains(dump, want) {
			t.Errorf("dump lacks %q:\n%s", want, dump)
		}
	}
	var d admin.Dump
	if err := json.Unmarshal([]byte(c.mustCLI("dump", "orders", "-o", "json")), &d); err != nil {
		t.Fatal(err)
	}
	if d.Job != "orders" || d.Namespace != "/"+c.ns || len(d.Nodes) < 10 || d.Nodes[0].Path != "/orders" {
		t.Errorf("dump JSON: job %q namespace %q, %d nodes", d.Job, d.Namespace, len(d.Nodes))
	}

	yaml := c.mustCLI("config", "get", "orders")
	cfg, err := job.DecodeConfig([]byte(yaml))
	if err != nil || cfg.Name != "orders" || cfg.ShardingTotalCount != 6 {
		t.Errorf("config get: %+v %v\n%s", cfg, err, yaml)
	}
	var got struct {
		Job      string
		Document string
		Config   admin.Config
	}
	if err := json.Unmarshal([]byte(c.mustCLI("config", "get", "orders", "-o", "json")), &got); err != nil || got.Config.Cron != "* * * * * *" || got.Document != yaml {
		t.Errorf("config get JSON: %+v %v", got, err)
	}

	// Every operation has a JSON form for scripts.
	var res struct{ Changes []admin.Change }
	if err := json.Unmarshal([]byte(c.mustCLI("pause", "s3", "-o", "json")), &res); err != nil ||
		len(res.Changes) != 1 || res.Changes[0] != (admin.Change{Job: "orders", Server: "s3", Changed: true}) {
		t.Errorf("pause JSON: %+v %v", res, err)
	}
	if err := json.Unmarshal([]byte(c.mustCLI("resume", "s3", "-o", "json")), &res); err != nil || !res.Changes[0].Changed {
		t.Errorf("resume JSON: %+v %v", res, err)
	}
}

func TestAdminErrors(t *testing.T) {
	t.Setenv("SHARDJOB_REGCENTER_SERVERS", "")
	ns := newNamespace()
	zk := strings.Join(zc.Servers(), ",")
	cases := []struct {
		args      []string
		code      int
		fragments []string
	}{
		{nil, exitUsage, []string{"no command"}},
		{[]string{"frobnicate"}, exitUsage, []string{`unknown command "frobnicate"`}},
		{[]string{"status"}, exitUsage, []string{"JOB is missing"}},
		{[]string{"status", "a", "b", "--zk", zk}, exitUsage, []string{`unexpected argument "b"`}},
		{[]string{"jobs", "--bogus"}, exitUsage, []string{"-bogus"}},
		{[]string{"jobs", "-o", "xml", "--zk", zk}, exitUsage, []string{`--output "xml"`}},
		{[]string{"config", "put", "x", "--zk", zk}, exitUsage, []string{`unknown config command "put"`}},
		{[]string{"jobs"}, exitUsage, []string{"no registry given", "--zk", "--etcd"}},
		{[]string{"jobs", "--zk", "nohostport"}, exitUsage, []string{`"nohostport" is not host:port`}},
		{[]string{"jobs", "--zk", "127.0.0.1:1", "--timeout", "1s"}, exitFailed, []string{"registry unreachable", "127.0.0.1:1", "1s"}},
		{[]string{"status", "nope", "--zk", zk, "--namespace", ns}, exitUnknown, []string{`unknown job "nope" in namespace /` + ns}},
		{[]string{"disable", "s9", "--zk", zk, "--namespace", ns}, exitUnknown, []string{`unknown server "s9"`}},
		{[]string{"disable", "s9", "--job", "nope", "--zk", zk, "--namespace", ns}, exitUnknown, []string{`unknown job "nope"`}},
		{[]string{"config", "get", "nope", "--zk", zk, "--namespace", ns}, exitUnknown, []string{`unknown job "nope"`}},
		{[]string{"dump", "../x", "--zk", zk, "--namespace", ns}, exitUsage, []string{`job name "../x"`}},
	}
	for _, tc := range cases {
		code, out, errOut := runCLI(tc.args...)
		checkFailure(t, tc.args, tc.code, tc.fragments, code, out, errOut)
	}

	code, out, errOut := runCLI("help")
	if code != 0 || !strings.Contains(out, "Exit codes:") || errOut != "" {
		t.Errorf("help: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{{"status", "-h"}, {"help", "trigger"}, {"--help"}} {
		if code, out, _ := runCLI(args...); code != 0 || !strings.Contains(out, "usage") && !strings.Contains(out, "Usage") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	// An empty namespace lists no jobs; flags may come first, too.
	if code, out, errOut := runCLI("--zk", zk, "--namespace", ns, "jobs"); code != 0 || !strings.Contains(out, "no jobs") {
		t.Errorf("jobs in an empty namespace: exit %d %q %q", code, out, errOut)
	}
	// The environment stands in for --zk.
	t.Setenv("SHARDJOB_REGCENTER_SERVERS", zk)
	t.Setenv("SHARDJOB_REGCENTER_NAMESPACE", ns)
	if code, out, errOut := runCLI("jobs", "-o", "json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("jobs from the environment: exit %d %q %q", code, out, errOut)
	}
}

func TestAdminRegcenterPrecedence(t *testing.T) {
	file := writeFile(t, "jobs.yaml", "regcenter:\n  servers: [file:2181]\n  namespace: filens\n  digest: file:pw\n  connectTimeout: 3s\njobs: []\n")
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	resolve := func(args ...string) resolved {
		t.Helper()
		var o options
		fs := newFlagSet(lookup("jobs"), &o)
		if _, err := parseArgs(fs, args); err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		cfg, err := regcenterConfig(&o, set, getenv)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return resolved{strings.Join(cfg.Servers, ","), cfg.Namespace, cfg.Digest, cfg.ConnectTimeout}
	}

	// The file alone.
	if got := resolve("--config", file); got != (resolved{"file:2181", "filens", "file:pw", 3 * time.Second}) {
		t.Errorf("file: %+v", got)
	}
	// The environment over the file (jobfile.LoadFile reads it).
	t.Setenv("SHARDJOB_REGCENTER_NAMESPACE", "envns")
	if got := resolve("--config", file); got.namespace != "envns" || got.servers != "file:2181" {
		t.Errorf("env over file: %+v", got)
	}
	// Flags over both.
	if got := resolve("--config", file, "--namespace", "flagns", "--zk", "a:1,b:2", "--timeout", "2s"); got != (resolved{"a:1,b:2", "flagns", "file:pw", 2 * time.Second}) {
		t.Errorf("flags over env and file: %+v", got)
	}
	// Without a file: the environment as getenv gives it, then flags.
	env["SHARDJOB_REGCENTER_SERVERS"] = "env:1, env:2"
	env["SHARDJOB_REGCENTER_DIGEST"] = "env:pw"
	env["SHARDJOB_REGCENTER_CONNECTTIMEOUT"] = "4s"
	if got := resolve(); got != (resolved{"env:1,env:2", "shardjob", "env:pw", 4 * time.Second}) {
		t.Errorf("env: %+v", got)
	}
	if got := resolve("--digest", "flag:pw", "--timeout", "1s"); got.digest != "flag:pw" || got.timeout != time.Second || got.servers != "env:1,env:2" {
		t.Errorf("flags over env: %+v", got)
	}
	env["SHARDJOB_REGCENTER_CONNECTTIMEOUT"] = "soon"
	var o options
	if _, err := regcenterConfig(&o, map[string]bool{}, getenv); err == nil || !strings.Contains(err.Error(), "SHARDJOB_REGCENTER_CONNECTTIMEOUT") {
		t.Errorf("bad env duration: %v", err)
	}
}

type resolved struct {
	servers, namespace, digest string
	timeout                    time.Duration
}

func TestAdminFindCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		cmd  string
		rest string
	}{
		{[]string{"status", "x"}, "status", "[x]"},
		{[]string{"--zk", "a:1", "status", "x"}, "status", "[--zk a:1 x]"},
		{[]string{"--zk=a:1", "-o", "json", "jobs"}, "jobs", "[--zk=a:1 -o json]"},
		{[]string{"-h"}, "", "[-h]"},
		{[]string{"--", "jobs"}, "jobs", "[--]"},
	} {
		cmd, rest := findCommand(tc.args)
		if cmd != tc.cmd || fmt.Sprint(rest) != tc.rest {
			t.Errorf("findCommand(%q) = %q, %v; want %q, %s", tc.args, cmd, rest, tc.cmd, tc.rest)
		}
	}
}
