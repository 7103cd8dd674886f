package job_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// An unmonitored job writes nothing per fire, and with its watches armed it
// sends nothing either: no proof, no marks, no completions. A reshard still
// happens when due (the leader hears of it through the epoch's watch) and
// the fires after it run every item once, on its new owner.
func TestUnmonitoredFiresSendNothingAndStillReshard(t *testing.T) {
	if testing.Short() {
		t.Skip("measures over several seconds")
	}
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("quiet", 4)
	cfg.Unmonitored = true
	a := startInstance(t, ns, "a", cfg, rec)
	b := startInstance(t, ns, "b", cfg, rec)
	settled := waitSpread(t, rec, time.Time{}, []string{"a", "b"}, 4, 30*time.Second)

	// Steady state: count both instances' requests over whole fires.
	const fires = 5
	var perFire float64
	for attempt := 0; ; attempt++ {
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1500 * time.Millisecond)))
		sa, sb := a.rc.Session(), b.rc.Session()
		before := a.rc.Stats().Total() + b.rc.Stats().Total()
		time.Sleep(fires * time.Second)
		d := a.rc.Stats().Total() + b.rc.Stats().Total() - before
		perFire = float64(d) / fires
		if (a.rc.Session() == sa && b.rc.Session() == sb) || attempt == 2 {
			break
		}
		t.Log("a session was lost while measuring; measuring again")
	}
	t.Logf("two instances of an unmonitored 4-item job: %.1f requests per fire together", perFire)
	// A count, not a timing: a proof per fire and instance would be 2, the
	// monitored job's marks and completions 4. The reconcile loop may add
	// a read now and then.
	if perFire >= 1 {
		t.Errorf("an unmonitored job's fires cost %.1f requests, want none in steady state", perFire)
	}
	for f, recs := range rec.fires() {
		if f.After(settled) && f.Before(time.Now().Add(-time.Second)) {
			checkFire(t, f, recs, 4)
		}
	}
	obs := observer(t, ns)
	for item := range 4 {
		kids, err := obs.Children(tctx(t), fmt.Sprintf("/quiet/execution/%d", item))
		if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
			t.Fatal(err)
		}
		if len(kids) > 0 {
			t.Errorf("item %d has %v under its execution node: an unmonitored job marks nothing", item, kids)
		}
	}

	// A third instance joins: the leader reshards at a fire without any
	// proof failing, and every fire after it runs each item once.
	startInstance(t, ns, "c", cfg, rec)
	settled = waitSpread(t, rec, settled, []string{"a", "b", "c"}, 4, 30*time.Second)
	done := rec.waitFires(t, settled, 3, 4, 20*time.Second)
	for _, f := range done {
		checkFire(t, f, rec.fires()[f], 4)
	}

	// An operator disables c. Nobody asks for the reshard this time: the
	// flag moves the epoch, and the leader's watch on it is what makes its
	// next fire read the assignment and reshard. c's items go to a and b.
	if _, err := obs.Create(tctx(t), "/quiet/servers/c/disabled", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	settled = waitSpread(t, rec, time.Now(), []string{"a", "b"}, 4, 30*time.Second)
	for _, f := range rec.waitFires(t, settled, 3, 4, 20*time.Second) {
		if by := checkFire(t, f, rec.fires()[f], 4); len(by["c"]) > 0 {
			t.Errorf("fire %s: disabled c ran %v", f.Format("15:04:05"), by["c"])
		}
	}
}

// waitSpread waits for a fire after since that ran every one of items
// once, on servers and on each of them, and returns its time.
func waitSpread(t *testing.T, rec *recorder, since time.Time, servers []string, items int, deadline time.Duration) time.Time {
	t.Helper()
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		var times []time.Time
		fires := rec.fires()
		for f := range fires {
			if f.After(since) {
				times = append(times, f)
			}
		}
		sort.Slice(times, func(i, j int) bool { return times[i].After(times[j]) })
		for _, f := range times {
			recs := fires[f]
			by := map[string]bool{}
			seen := map[int]int{}
			for _, r := range recs {
				by[r.server] = true
				seen[r.item]++
			}
			ok := len(recs) == items && len(seen) == items && len(by) == len(servers)
			for _, s := range servers {
				ok = ok && by[s]
			}
			if ok {
				return f
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no fire ran %d items once across %v within %v", items, servers, deadline)
	return time.Time{}
}

// Turned on in the config node at run time, Unmonitored takes effect from
// the next fire: the instance stops proving its assignment and writing
// marks; turned off again, the marks come back.
func TestUnmonitoredSwitchedInTheConfigNode(t *testing.T) {
	if testing.Short() {
		t.Skip("measures over several seconds")
	}
	ns := namespace(t)
	rec := newRecorder()
	in := startInstance(t, ns, "a", everySecond("switch", 1), rec)
	rec.waitFires(t, time.Now(), 2, 1, 30*time.Second)
	obs := observer(t, ns)
	setMonitor := func(from, to string) {
		t.Helper()
		data, st, err := obs.Get(tctx(t), "/switch/config")
		if err != nil {
			t.Fatal(err)
		}
		doc := strings.Replace(string(data), "monitorExecution: "+from, "monitorExecution: "+to, 1)
		if doc == string(data) {
			t.Fatalf("no monitorExecution: %s in the config node:\n%s", from, data)
		}
		if _, err := obs.Set(tctx(t), "/switch/config", []byte(doc), st.Version); err != nil {
			t.Fatal(err)
		}
	}
	perFire := func() float64 {
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1500 * time.Millisecond)))
		before := in.rc.Stats().Total()
		time.Sleep(4 * time.Second)
		return float64(in.rc.Stats().Total()-before) / 4
	}

	setMonitor("true", "false")
	rec.waitFires(t, time.Now().Add(2*time.Second), 2, 1, 20*time.Second)
	got := perFire()
	t.Logf("per fire %.2f", got)
	if got >= 1 {
		t.Errorf("unmonitored since the config changed: %.1f requests per fire, want none", got)
	}
	completed := func() bool {
		ok, _, err := obs.Exists(tctx(t), "/switch/execution/0/completed")
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if completed() {
		if err := obs.Delete(tctx(t), "/switch/execution/0/completed", -1); err != nil {
			t.Fatal(err)
		}
	}
	rec.waitFires(t, time.Now(), 2, 1, 20*time.Second)
	if completed() {
		t.Error("an unmonitored fire wrote its completion")
	}

	setMonitor("false", "true")
	rec.waitFires(t, time.Now().Add(2*time.Second), 2, 1, 20*time.Second)
	if !completed() {
		t.Error("monitored again, a fire wrote no completion")
	}
}
