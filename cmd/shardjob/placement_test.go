package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
)

// The placement verbs end to end: instances shows each instance's units
// (started: its Start returned),
// drain --wait returns once the instance holds nothing and runs nothing
// (and its items run on the others), undrain gives it units back,
// rebalance flags every job, and bad input names the problem.
func TestAdminPlacementVerbs(t *testing.T) {
	t.Parallel()
	c := newCluster(t, everySecond("orders"), "")
	c.warmUp()

	var p admin.Placement
	if err := json.Unmarshal([]byte(c.mustCLI("instances", "-o", "json")), &p); err != nil {
		t.Fatal(err)
	}
	if p.Units != 6 || len(p.Instances) != 3 {
		t.Fatalf("instances: %+v", p)
	}
	for _, in := range p.Instances {
		if !in.Live || in.Units != 2 || in.Cap != 1+6/2 || in.FaultTolerance != 1 || in.Starting {
			t.Errorf("instance %+v; want live, 2 units, cap 4, tolerance 1, started", in)
		}
	}
	if out := c.mustCLI("instances"); !strings.Contains(out, "SERVER") || !strings.Contains(out, "6 units in the namespace") {
		t.Errorf("instances text:\n%s", out)
	}

	out := c.mustCLI("drain", "s2", "--wait", "30s")
	if !strings.Contains(out, "s2 is draining") || !strings.Contains(out, "s2 is drained") {
		t.Errorf("drain output:\n%s", out)
	}
	at := time.Now()
	fires, byFire := c.rec.waitFires(t, at.Add(time.Second), 3, allSix)
	for _, f := range fires {
		if by := checkFire(t, f, byFire[f], allSix); by["s2"] != nil {
			t.Errorf("fire %s: drained s2 ran items %v", f.Format("15:04:05"), by["s2"])
		}
	}
	if err := json.Unmarshal([]byte(c.mustCLI("instances", "-o", "json")), &p); err != nil {
		t.Fatal(err)
	}
	for _, in := range p.Instances {
		if in.Server == "s2" && (!in.Draining || !in.Drained || in.Units != 0 || in.Cap != 0) {
			t.Errorf("drained s2: %+v", in)
		}
	}
	if out := c.mustCLI("drain", "s2"); !strings.Contains(out, "already draining") {
		t.Errorf("second drain:\n%s", out)
	}

	if out := c.mustCLI("undrain", "s2"); !strings.Contains(out, "s2 is no longer draining") {
		t.Errorf("undrain output:\n%s", out)
	}
	waitFor(t, 30*time.Second, "s2 to run items again", func() bool {
		for _, f := range c.rec.fires(time.Now().Add(-2 * time.Second)) {
			for _, r := range f {
				if r.server == "s2" {
					return true
				}
			}
		}
		return false
	})
	if out := c.mustCLI("rebalance"); !strings.Contains(out, "1 jobs place their items again") {
		t.Errorf("rebalance output:\n%s", out)
	}

	if code, _, errOut := c.cli("drain", "bad/id"); code != exitUsage || !strings.Contains(errOut, "bad/id") {
		t.Errorf("drain of a bad id: exit %d, %q", code, errOut)
	}
	if code, _, errOut := c.cli("drain"); code != exitUsage || errOut == "" {
		t.Errorf("drain without a server: exit %d, %q", code, errOut)
	}
}

// Draining the only instance is not "safe to stop" without a word: its
// units stay unplaced and nothing runs them, and drain says so.
func TestDrainOfTheOnlyInstanceWarns(t *testing.T) {
	t.Parallel()
	cfg := everySecond("alone")
	c := &cluster{t: t, ns: newNamespace(), name: cfg.Name, rec: &recorder{}, inst: map[string]*instance{}}
	c.inst["s1"] = c.start("s1", cfg)
	c.rec.waitFires(t, time.Now(), 1, allSix)

	code, out, errOut := c.cli("drain", "s1", "--wait", "30s")
	if code != 0 {
		t.Fatalf("drain: exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(errOut, "warning: no other instance may take units") {
		t.Errorf("drain of the only instance: stderr %q, want a warning", errOut)
	}
	if strings.Contains(out, "it is safe to stop\n") || !strings.Contains(out, "its units are unplaced") {
		t.Errorf("drain of the only instance:\n%s", out)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(c.mustCLI("drain", "s1", "-o", "json")), &res); err != nil {
		t.Fatal(err)
	}
	if w, _ := res["warning"].(string); !strings.Contains(w, "no other instance may take units") {
		t.Errorf("drain -o json: %v, want a warning", res)
	}
}
