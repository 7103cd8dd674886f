package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// TestEtcdCLISmoke runs the everyday commands with --etcd against three
// schedulers on an etcd member: jobs, status, instances and trigger read
// and steer them as they do on ZooKeeper.
func TestEtcdCLISmoke(t *testing.T) {
	t.Setenv("SHARDJOB_REGCENTER_SERVERS", "")
	t.Setenv("SHARDJOB_REGCENTER_ETCD", "")
	etcd := etcdtest.Start(t)
	// Fires on January 1st only: every execution here is a trigger.
	c := newClusterOn(t, job.Config{Name: "report", Cron: "0 0 0 1 1 *", ShardingTotalCount: 6}, "", etcd.Endpoints())

	waitFor(t, 30*time.Second, "three instances online", func() bool {
		st := c.status()
		for _, s := range st.Servers {
			if !s.Online {
				return false
			}
		}
		return len(st.Servers) == 3
	})

	var jobs []admin.JobSummary
	if err := json.Unmarshal([]byte(c.mustCLI("jobs", "-o", "json")), &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Name != "report" || jobs[0].Online != 3 || jobs[0].ShardingTotalCount != 6 {
		t.Errorf("jobs: %+v", jobs)
	}
	if out := c.mustCLI("jobs"); !strings.Contains(out, "report") {
		t.Errorf("jobs text:\n%s", out)
	}

	out := c.mustCLI("trigger", "report")
	if !strings.Contains(out, "triggered report on s1, s2, s3") {
		t.Errorf("trigger output:\n%s", out)
	}
	waitFor(t, 30*time.Second, "six triggered executions", func() bool { return len(c.rec.all()) >= 6 })
	waitFor(t, 30*time.Second, "the trigger to finish", c.idle)
	count := map[int]int{}
	for _, e := range c.rec.all() {
		if e.kind != job.KindTrigger {
			t.Errorf("item %d ran as %q, want trigger", e.item, e.kind)
		}
		count[e.item]++
	}
	for it := range 6 {
		if count[it] != 1 {
			t.Errorf("item %d ran %d times, want once", it, count[it])
		}
	}

	// The trigger placed the items: two units on each instance.
	var p admin.Placement
	if err := json.Unmarshal([]byte(c.mustCLI("instances", "-o", "json")), &p); err != nil {
		t.Fatal(err)
	}
	if p.Units != 6 || len(p.Instances) != 3 {
		t.Errorf("instances: %+v", p)
	}
	for _, in := range p.Instances {
		if !in.Live || in.Units != 2 {
			t.Errorf("instance %+v: want live with 2 units", in)
		}
	}
	if out := c.mustCLI("instances"); !strings.Contains(out, "6 units in the namespace") {
		t.Errorf("instances text:\n%s", out)
	}

	// The environment stands in for --etcd.
	t.Setenv("SHARDJOB_REGCENTER_ETCD", etcd.ConnectString())
	t.Setenv("SHARDJOB_REGCENTER_NAMESPACE", c.ns)
	if code, out, errOut := runCLI("status", "report", "-o", "json"); code != 0 || !strings.Contains(out, `"report"`) {
		t.Errorf("status from the environment: exit %d %q %q", code, out, errOut)
	}
}
