package job_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/backfill"
	"github.com/shardjob/shardjob/job"
)

// backfillRig is two instances of a job that runs every second, with an
// admin beside them; log sees every run.
type backfillRig struct {
	ns  string
	cfg job.Config
	log *attemptLog
	adm *admin.Admin
	ins map[string]*instance
	mu  sync.Mutex
}

func newBackfillRig(t *testing.T, name string, items int, servers ...string) *backfillRig {
	t.Helper()
	rig := &backfillRig{ns: namespace(t), log: newAttemptLog(), ins: map[string]*instance{},
		cfg: job.Config{Name: name, Cron: "* * * * * *", ShardingTotalCount: items}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range servers {
		rc, s := connect(t, ctx, rig.ns, id)
		if err := s.Add(ctx, rig.cfg, rig.log.job(id, func(job.ShardingContext) bool { return false })); err != nil {
			t.Fatal(err)
		}
		rig.ins[id] = running(t, ctx, id, rc, s)
	}
	rig.adm = admin.New(observer(t, rig.ns), admin.JobCodec(false))
	// Every instance has run its items once: the assignment stands.
	rig.log.wait(t, 30*time.Second, "a fire on every instance", func(rs []attemptRec) bool {
		on := map[string]bool{}
		for _, r := range rs {
			on[r.server] = true
		}
		return len(on) == len(servers)
	})
	return rig
}

// backfillRuns returns the backfill runs seen, by item and fire.
func (rig *backfillRig) backfillRuns() map[string][]attemptRec {
	out := map[string][]attemptRec{}
	for _, r := range rig.log.snapshot() {
		if r.kind == job.KindBackfill {
			k := fmt.Sprintf("%d@%s", r.item, r.fire.UTC().Format(time.TimeOnly))
			out[k] = append(out[k], r)
		}
	}
	return out
}

func (rig *backfillRig) waitThrough(t *testing.T) admin.BackfillStatus {
	t.Helper()
	var st admin.BackfillStatus
	waitUntil(t, 60*time.Second, func() bool {
		var err error
		st, err = rig.adm.BackfillStatus(tctx(t), rig.cfg.Name)
		return err == nil && st.State == admin.StateThrough
	})
	return st
}

// checkEachOnce checks that every fire of [from, to] ran once on every
// item as a backfill run, and nothing else did.
func (rig *backfillRig) checkEachOnce(t *testing.T, from, to time.Time) {
	t.Helper()
	runs := rig.backfillRuns()
	want := 0
	for f := from; !f.After(to); f = f.Add(time.Second) {
		for it := range rig.cfg.ShardingTotalCount {
			want++
			k := fmt.Sprintf("%d@%s", it, f.UTC().Format(time.TimeOnly))
			if n := len(runs[k]); n != 1 {
				t.Errorf("item %d, fire %s: %d backfill runs, want 1", it, f.Format(time.TimeOnly), n)
			}
		}
	}
	if len(runs) != want {
		t.Errorf("%d item fires ran as backfill runs, want %d (the range's)", len(runs), want)
	}
	rig.log.checkNoOverlap(t)
}

// A backfill runs every fire of a past range once on every item, each
// on its owner as a backfill run beside the live schedule, never two runs
// of an item at once; the status says so.
func TestBackfillRunsThePastRangeOnceOnEachOwner(t *testing.T) {
	rig := newBackfillRig(t, "bf", 4, "s1", "s2")
	to := time.Now().Add(-5 * time.Second).Truncate(time.Second)
	from := to.Add(-9 * time.Second)
	req, err := rig.adm.StartBackfill(tctx(t), "bf", admin.Backfill{From: from, To: to, Rate: 50, By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	st := rig.waitThrough(t)
	if st.Fires != 10 || st.Items != 4 || st.Done != 40 || st.Through != 4 || st.Request.ID != req.ID {
		t.Errorf("status %+v: want 10 fires of 4 items, 40 runs done", st)
	}
	rig.checkEachOnce(t, from, to)
	on := map[string]bool{}
	for _, rs := range rig.backfillRuns() {
		on[rs[0].server] = true
	}
	if len(on) != 2 {
		t.Errorf("the backfill ran on %v, want both owners", on)
	}
}

// A backfill the operator cancels stops, and resumed goes on from its
// items' progress: no fire runs twice.
func TestBackfillCancelledAndResumedRunsEachFireOnce(t *testing.T) {
	rig := newBackfillRig(t, "bfc", 2, "s1")
	to := time.Now().Add(-5 * time.Second).Truncate(time.Second)
	from := to.Add(-19 * time.Second)
	if _, err := rig.adm.StartBackfill(tctx(t), "bfc", admin.Backfill{From: from, To: to, Rate: 4}); err != nil {
		t.Fatal(err)
	}
	rig.log.wait(t, 30*time.Second, "a few backfill runs", func([]attemptRec) bool { return len(rig.backfillRuns()) >= 4 })
	if _, err := rig.adm.CancelBackfill(tctx(t), "bfc"); err != nil {
		t.Fatal(err)
	}
	st, err := rig.adm.BackfillStatus(tctx(t), "bfc")
	if err != nil || st.State != backfill.Cancelled || st.Done == st.Fires*st.Items {
		t.Fatalf("status after the cancel: %+v, %v", st, err)
	}
	if _, err := rig.adm.ResumeBackfill(tctx(t), "bfc"); err != nil {
		t.Fatal(err)
	}
	rig.waitThrough(t)
	rig.checkEachOnce(t, from, to)
}

// A backfill outlives the instance that ran half its items: killed
// mid-range, its items go to the other at the reshard, whose driver goes on
// from their progress. The crash may run again the fire it had in flight,
// no other.
func TestBackfillGoesOnAfterACrash(t *testing.T) {
	rig := newBackfillRig(t, "bfk", 4, "s1", "s2")
	to := time.Now().Add(-5 * time.Second).Truncate(time.Second)
	from := to.Add(-29 * time.Second)
	if _, err := rig.adm.StartBackfill(tctx(t), "bfk", admin.Backfill{From: from, To: to, Rate: 8}); err != nil {
		t.Fatal(err)
	}
	rig.log.wait(t, 30*time.Second, "backfill runs on s1", func([]attemptRec) bool {
		n := 0
		for _, rs := range rig.backfillRuns() {
			if rs[0].server == "s1" {
				n++
			}
		}
		return n >= 6
	})
	rig.ins["s1"].crash(t)
	rig.waitThrough(t)
	runs := rig.backfillRuns()
	for f := from; !f.After(to); f = f.Add(time.Second) {
		for it := range 4 {
			if n := len(runs[fmt.Sprintf("%d@%s", it, f.UTC().Format(time.TimeOnly))]); n == 0 {
				t.Errorf("item %d, fire %s: not run", it, f.Format(time.TimeOnly))
			}
		}
	}
	again := map[int]int{}
	for k, rs := range runs {
		if len(rs) > 1 {
			if rs[0].server != "s1" || len(rs) > 2 {
				t.Errorf("%s ran %d times: %+v", k, len(rs), rs)
			}
			again[rs[0].item]++
		}
	}
	for it, n := range again {
		if n > 1 {
			t.Errorf("item %d: %d fires ran again after the crash, want at most the one in flight", it, n)
		}
	}
	rig.log.checkNoOverlap(t)
}

// An instance that joins mid-backfill is told of it (the request reached
// only the servers online when it started): the reshard gives it items,
// and it runs their fires from their progress, each once.
func TestBackfillReachesAnInstanceThatJoins(t *testing.T) {
	rig := newBackfillRig(t, "bfj", 4, "s1")
	to := time.Now().Add(-5 * time.Second).Truncate(time.Second)
	from := to.Add(-39 * time.Second)
	if _, err := rig.adm.StartBackfill(tctx(t), "bfj", admin.Backfill{From: from, To: to, Rate: 4}); err != nil {
		t.Fatal(err)
	}
	rig.log.wait(t, 30*time.Second, "backfill runs on s1", func([]attemptRec) bool { return len(rig.backfillRuns()) >= 8 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, rig.ns, "s2")
	if err := s.Add(ctx, rig.cfg, rig.log.job("s2", func(job.ShardingContext) bool { return false })); err != nil {
		t.Fatal(err)
	}
	running(t, ctx, "s2", rc, s)
	rig.log.wait(t, 30*time.Second, "a backfill run on s2", func(rs []attemptRec) bool {
		for _, r := range rs {
			if r.server == "s2" && r.kind == job.KindBackfill {
				return true
			}
		}
		return false
	})
	rig.waitThrough(t)
	rig.checkEachOnce(t, from, to)
}

// A job far from its next fire (hourly, never fired) is prepared and
// placed for its backfill, as for a trigger: the backfill runs at once.
func TestBackfillOfAJobThatHasNotFiredYet(t *testing.T) {
	ns := namespace(t)
	log := newAttemptLog()
	cfg := job.Config{Name: "hourly", Cron: "0 0 * * * *", ShardingTotalCount: 2}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range []string{"s1", "s2"} {
		rc, s := connect(t, ctx, ns, id)
		if err := s.Add(ctx, cfg, log.job(id, func(job.ShardingContext) bool { return false })); err != nil {
			t.Fatal(err)
		}
		running(t, ctx, id, rc, s)
	}
	adm := admin.New(observer(t, ns), admin.JobCodec(false))
	to := time.Now().Add(-time.Hour).Truncate(time.Hour)
	if _, err := adm.StartBackfill(tctx(t), "hourly", admin.Backfill{From: to.Add(-2 * time.Hour), To: to, Rate: 50}); err != nil {
		t.Fatal(err)
	}
	var st admin.BackfillStatus
	waitUntil(t, 60*time.Second, func() bool {
		var err error
		st, err = adm.BackfillStatus(tctx(t), "hourly")
		return err == nil && st.State == admin.StateThrough
	})
	if st.Done != 6 {
		t.Errorf("status %+v: want 3 fires of 2 items done", st)
	}
	for _, r := range log.snapshot() {
		if r.kind != job.KindBackfill {
			t.Errorf("a %s run of an hourly job that never fired: %+v", r.kind, r)
		}
	}
}

// A backfill is refused, with nothing written, for a range that ends in
// the future, holds no fire or too many, a bad rate, or while another
// runs.
func TestBackfillRefusesBadRanges(t *testing.T) {
	rig := newBackfillRig(t, "bfr", 1, "s1")
	now := time.Now()
	for _, tc := range []struct {
		name string
		b    admin.Backfill
		want error
	}{
		{"future", admin.Backfill{From: now.Add(-time.Minute), To: now.Add(time.Hour)}, backfill.ErrFuture},
		{"reversed", admin.Backfill{From: now.Add(-time.Minute), To: now.Add(-2 * time.Minute)}, backfill.ErrInvalid},
		{"too many fires", admin.Backfill{From: now.Add(-72 * time.Hour), To: now.Add(-time.Minute)}, backfill.ErrTooLarge},
		{"rate", admin.Backfill{From: now.Add(-time.Minute), To: now.Add(-30 * time.Second), Rate: backfill.MaxRate + 1}, backfill.ErrInvalid},
	} {
		_, err := rig.adm.StartBackfill(tctx(t), "bfr", tc.b)
		if !errors.Is(err, tc.want) || !errors.Is(err, admin.ErrInvalid) {
			t.Errorf("%s: %v, want %v (and admin.ErrInvalid)", tc.name, err, tc.want)
		}
	}
	if _, err := rig.adm.BackfillStatus(tctx(t), "bfr"); !errors.Is(err, admin.ErrInvalid) {
		t.Errorf("status with nothing started: %v, want admin.ErrInvalid (no backfill)", err)
	}
	if _, err := rig.adm.StartBackfill(tctx(t), "nope", admin.Backfill{From: now.Add(-time.Minute), To: now.Add(-30 * time.Second)}); !errors.Is(err, admin.ErrUnknownJob) {
		t.Errorf("an unknown job: %v", err)
	}
	slow := admin.Backfill{From: now.Add(-10 * time.Minute), To: now.Add(-time.Minute), Rate: 0.5}
	if _, err := rig.adm.StartBackfill(tctx(t), "bfr", slow); err != nil {
		t.Fatal(err)
	}
	if _, err := rig.adm.StartBackfill(tctx(t), "bfr", slow); !errors.Is(err, admin.ErrConflict) {
		t.Errorf("a second backfill while one runs: %v, want admin.ErrConflict", err)
	}
	if _, err := rig.adm.CancelBackfill(tctx(t), "bfr"); err != nil {
		t.Fatal(err)
	}
}
