package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// claimClock wraps an instance's registry and notes when each fire's
// claim was sent: a transaction that checks the job's reshard epoch (the
// proof) or creates running marks. A held item (job/hold.go) keeps its
// mark across fires, so a steady fire of held items claims nothing, and
// the mark's node tells only of the fire that made it.
type claimClock struct {
	regcenter.Center
	epoch string // the reshard epoch's path
	marks string // the job's execution path, with its slash
	mu    sync.Mutex
	sent  []time.Time
}

func (c *claimClock) Multi(ctx context.Context, ops ...regcenter.Op) error {
	for _, op := range ops {
		ch, check := op.(regcenter.CheckOp)
		cr, create := op.(regcenter.CreateOp)
		if (check && ch.Path == c.epoch) || (create && strings.HasPrefix(cr.Path, c.marks) && strings.HasSuffix(cr.Path, "/running")) {
			c.mu.Lock()
			c.sent = append(c.sent, time.Now())
			c.mu.Unlock()
			break
		}
	}
	return c.Center.Multi(ctx, ops...)
}

// SessionTimeout forwards the wrapped registry's, which the scheduler reads.
func (c *claimClock) SessionTimeout() time.Duration { return sessionTimeoutOf(c.Center) }

// sessionTimeoutOf is rc's session timeout, for a test's wrapper of a
// registry to forward (the scheduler reads it); 0 when rc has none.
func sessionTimeoutOf(rc regcenter.Center) time.Duration {
	if z, ok := rc.(interface{ SessionTimeout() time.Duration }); ok {
		return z.SessionTimeout()
	}
	return 0
}

// claims is how many claims were sent.
func (c *claimClock) claims() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sent)
}

// claimedAhead returns the fires (of a schedule every period, on the
// period's multiples) whose claim was sent less than lead before them.
func (c *claimClock) claimedAhead(period, lead time.Duration) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var fires []time.Time
	for _, at := range c.sent {
		fire := at.Truncate(period).Add(period)
		if fire.Sub(at) < lead && (len(fires) == 0 || !fires[len(fires)-1].Equal(fire)) {
			fires = append(fires, fire)
		}
	}
	return fires
}

// startClocked starts instance id of job cfg, as startInstance does, on a
// registry whose claims are timed.
func startClocked(t *testing.T, ns, id string, cfg job.Config, rec *recorder, opts ...job.Option) (*instance, *claimClock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var clock *claimClock
	rc, s := connectVia(t, ctx, ns, id, func(rc regcenter.Center) regcenter.Center {
		clock = &claimClock{Center: rc, epoch: "/" + cfg.Name + "/leader/sharding", marks: "/" + cfg.Name + "/execution/"}
		return clock
	}, opts...)
	if err := s.Add(ctx, cfg, rec.job(id)); err != nil {
		t.Fatal(err)
	}
	return running(t, ctx, id, rc, s), clock
}

// TestFireClaimsAheadAndStartsOnTime: with a lead, a fire that marks its
// items does so before its time; once the instance holds every item's
// mark its fires claim nothing at all; and no execution starts before the
// fire it stands for.
func TestFireClaimsAheadAndStartsOnTime(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	rec.hold = 200 * time.Millisecond
	cfg := job.Config{Name: "lead", Cron: "*/2 * * * * *", ShardingTotalCount: 3}
	_, clock := startClocked(t, ns, "s1", cfg, rec, job.WithFireLead(500*time.Millisecond))
	var early []time.Time
	waitUntil(t, 20*time.Second, func() bool {
		early = clock.claimedAhead(2*time.Second, 500*time.Millisecond)
		return len(early) >= 1
	})
	// Three fires after the holds settle: none of them claims.
	rec.waitFires(t, early[0].Add(4*time.Second), 1, 3, 20*time.Second)
	settled := clock.claims()
	from := time.Now()
	fires := rec.waitFires(t, from, 3, 3, 20*time.Second)
	for _, f := range fires {
		checkFire(t, f, rec.fires()[f], 3)
	}
	if n := clock.claims() - settled; n > 0 {
		t.Errorf("%d claims over three fires of held items, want none", n)
	}
	for _, r := range rec.snapshot() {
		if r.begin.Before(r.through) {
			t.Errorf("item %d (%s run, fire %s through %s) started %v before its fire", r.item, r.kind,
				r.fire.Format("15:04:05.000"), r.through.Format("15:04:05.000"), r.through.Sub(r.begin))
		}
	}
	t.Logf("fires claimed ahead of their time: %v; claims in all: %d", early, clock.claims())
}

// TestStopBetweenClaimAndFireStartsNothing: an instance that stops after
// a fire claimed its items and before the fire's time runs none of them;
// their marks go, and no completion records the fire.
func TestStopBetweenClaimAndFireStartsNothing(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := job.Config{Name: "leadstop", Cron: "*/4 * * * * *", ShardingTotalCount: 2}
	// Started just after a fire time, so that the first fire — the one
	// that marks the items, and claims ahead — is most of a period away.
	time.Sleep(time.Until(time.Now().Truncate(4 * time.Second).Add(4*time.Second + 100*time.Millisecond)))
	in, clock := startClocked(t, ns, "s1", cfg, rec, job.WithFireLead(time.Second))
	obs := observer(t, ns)
	var claimed time.Time
	waitUntil(t, 20*time.Second, func() bool {
		early := clock.claimedAhead(4*time.Second, time.Second)
		if len(early) > 0 && time.Until(early[len(early)-1]) > 300*time.Millisecond {
			claimed = early[len(early)-1]
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
	for _, it := range []string{"0", "1"} {
		if ok, _, err := obs.Exists(tctx(t), "/leadstop/execution/"+it+"/running"); err != nil || ok {
			t.Errorf("item %s: the running mark outlived the stop (%v)", it, err)
		}
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

// TestBusyItemsAreClaimedOnceReleased: when a fire's time comes while its
// items still run for the previous fire's, or its lead begins then, the
// fire takes them as soon as they are released, runs them at its time and
// owes nothing.
func TestBusyItemsAreClaimedOnceReleased(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	rec.hold = 1300 * time.Millisecond // busy 0.3 s into the next fire's 1 s lead
	cfg := job.Config{Name: "leadbusy", Cron: "*/2 * * * * *", ShardingTotalCount: 2}
	_, clock := startClocked(t, ns, "s1", cfg, rec, job.WithFireLead(time.Second))
	var early []time.Time
	waitUntil(t, 30*time.Second, func() bool {
		early = clock.claimedAhead(2*time.Second, time.Second)
		return len(early) >= 1
	})
	fires := rec.waitFires(t, early[0].Add(-time.Millisecond), 3, 2, 20*time.Second)
	for _, f := range fires {
		checkFire(t, f, rec.fires()[f], 2)
	}
	for _, r := range rec.snapshot() {
		if r.kind != job.KindFire {
			t.Errorf("item %d ran a %s run (fire %s): a fire found its item busy", r.item, r.kind, r.fire.Format("15:04:05"))
		}
		if r.begin.Before(r.through) {
			t.Errorf("item %d started %v before its fire %s", r.item, r.through.Sub(r.begin), r.through.Format("15:04:05.000"))
		}
	}
	t.Logf("fires claimed ahead of their time: %v", early)
}
