package job_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// markOf reads the running mark of item 0 of job name, if any: the fire it
// is for and when it was written.
func markOf(t *testing.T, obs regcenter.Center, name string) (fire, begin time.Time, ok bool) {
	t.Helper()
	data, _, err := obs.Get(tctx(t), "/"+name+"/execution/0/running")
	if errors.Is(err, regcenter.ErrNoNode) {
		return time.Time{}, time.Time{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Fire  int64 `json:"fire"`
		Begin int64 `json:"begin"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("running mark %q: %v", data, err)
	}
	return time.UnixMilli(m.Fire), time.UnixMilli(m.Begin), true
}

// TestFireClaimsAheadAndStartsOnTime: with a lead, a steady-state fire
// marks its items running before its time, and no execution starts before
// the fire it stands for.
func TestFireClaimsAheadAndStartsOnTime(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	rec.hold = 200 * time.Millisecond
	cfg := job.Config{Name: "lead", Cron: "*/2 * * * * *", ShardingTotalCount: 3}
	startInstance(t, ns, "s1", cfg, rec, job.WithFireLead(500*time.Millisecond))
	obs := observer(t, ns)
	var early []time.Time
	waitUntil(t, 20*time.Second, func() bool {
		if fire, begin, ok := markOf(t, obs, "lead"); ok && begin.Before(fire) && (len(early) == 0 || !early[len(early)-1].Equal(fire)) {
			early = append(early, fire)
		}
		return len(early) >= 2
	})
	fires := rec.waitFires(t, time.Time{}, 2, 3, 20*time.Second)
	for _, f := range fires {
		checkFire(t, f, rec.fires()[f], 3)
	}
	for _, r := range rec.snapshot() {
		if r.begin.Before(r.through) {
			t.Errorf("item %d (%s run, fire %s through %s) started %v before its fire", r.item, r.kind,
				r.fire.Format("15:04:05.000"), r.through.Format("15:04:05.000"), r.through.Sub(r.begin))
		}
	}
	t.Logf("fires claimed ahead of their time: %v", early)
}

// TestStopBetweenClaimAndFireStartsNothing: an instance that stops after
// a fire claimed its items and before the fire's time runs none of them;
// their marks go, and no completion records the fire.
func TestStopBetweenClaimAndFireStartsNothing(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := job.Config{Name: "leadstop", Cron: "*/4 * * * * *", ShardingTotalCount: 2}
	in := startInstance(t, ns, "s1", cfg, rec, job.WithFireLead(time.Second))
	obs := observer(t, ns)
	var claimed time.Time
	waitUntil(t, 20*time.Second, func() bool {
		fire, _, ok := markOf(t, obs, "leadstop")
		if ok && time.Until(fire) > 300*time.Millisecond {
			claimed = fire
			return true
		}
		return false
	})
	in.stop(t)
	for _, r := range rec.snapshot() {
		if !r.through.Before(claimed) {
			t.Errorf("item %d ran for the fire at %s claimed before the stop", r.item, claimed.Format("15:04:05.000"))
		}
	}
	if _, _, ok := markOf(t, obs, "leadstop"); ok {
		t.Error("the claimed fire's running mark outlived the stop")
	}
	data, _, err := obs.Get(tctx(t), "/leadstop/execution/0/completed")
	if err == nil {
		var c struct {
			Fire int64 `json:"fire"`
		}
		if json.Unmarshal(data, &c) == nil && !time.UnixMilli(c.Fire).Before(claimed) {
			t.Errorf("item 0's completion records the fire at %s, which never ran", claimed.Format("15:04:05.000"))
		}
	} else if !errors.Is(err, regcenter.ErrNoNode) {
		t.Fatal(err)
	}
}

// TestFireLeadIsValidated: a negative or huge lead is refused by name.
func TestFireLeadIsValidated(t *testing.T) {
	rc := observer(t, namespace(t))
	for _, d := range []time.Duration{-time.Millisecond, time.Hour} {
		_, err := job.NewScheduler(rc, job.WithFireLead(d))
		if !errors.Is(err, job.ErrInvalidOption) {
			t.Errorf("WithFireLead(%v): got %v, want ErrInvalidOption", d, err)
		}
	}
}

// TestBusyItemsAreClaimedOnceReleased: when a fire's lead begins while its
// items still run for the previous fire, the fire claims them as soon as
// they are released — still ahead of its time — and owes nothing.
func TestBusyItemsAreClaimedOnceReleased(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	rec.hold = 1300 * time.Millisecond // busy 0.3 s into the next fire's 1 s lead
	cfg := job.Config{Name: "leadbusy", Cron: "*/2 * * * * *", ShardingTotalCount: 2}
	startInstance(t, ns, "s1", cfg, rec, job.WithFireLead(time.Second))
	obs := observer(t, ns)
	var early []time.Time
	waitUntil(t, 30*time.Second, func() bool {
		if fire, begin, ok := markOf(t, obs, "leadbusy"); ok && begin.Before(fire) && (len(early) == 0 || !early[len(early)-1].Equal(fire)) {
			early = append(early, fire)
		}
		return len(early) >= 3
	})
	fires := rec.waitFires(t, early[1].Add(-time.Millisecond), 2, 2, 20*time.Second)
	for _, f := range fires {
		checkFire(t, f, rec.fires()[f], 2)
	}
	for _, r := range rec.snapshot() {
		if r.kind != job.KindFire {
			t.Errorf("item %d ran a %s run (fire %s): a fire claimed early found its item busy", r.item, r.kind, r.fire.Format("15:04:05"))
		}
		if r.begin.Before(r.through) {
			t.Errorf("item %d started %v before its fire %s", r.item, r.through.Sub(r.begin), r.through.Format("15:04:05.000"))
		}
	}
	t.Logf("fires claimed ahead of their time: %v", early)
}
