package job_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// failProofOnce fails, once armed, the next fire's proof (a transaction
// that opens with checks of the sharding nodes) of an assignment that
// gives b items (its sharding node written since it joined), as a
// reshard committed between the fire's read and its transaction would.
type failProofOnce struct {
	regcenter.Center
	armed atomic.Bool
	hit   atomic.Bool
}

func (f *failProofOnce) gained(ops []regcenter.Op) bool {
	if _, ok := ops[0].(regcenter.CheckOp); !ok {
		return false
	}
	for _, op := range ops {
		if c, ok := op.(regcenter.CheckOp); ok && strings.HasSuffix(c.Path, "/servers/b/sharding") && c.Version > 0 {
			return true
		}
	}
	return false
}

func (f *failProofOnce) Multi(ctx context.Context, ops ...regcenter.Op) error {
	if len(ops) > 0 && f.armed.Load() && f.gained(ops) {
		if f.armed.CompareAndSwap(true, false) {
			f.hit.Store(true)
			return &regcenter.MultiError{Index: 0, Op: ops[0], Err: regcenter.ErrBadVersion}
		}
	}
	return f.Center.Multi(ctx, ops...)
}

// A fire whose proof fails reads its assignment again and fires on it; an
// item it gains there is still new to this instance, and the gap its
// previous owner left is made up. The first attempt used to count the item
// as held since itself: the retry fired it plainly, and the fires the
// crashed owner had not recorded were never made up (seen on PostgreSQL,
// where a second reshard right after a crash fails the new owner's first
// proof). a runs a job every five seconds with its records behind (an
// opted-in interval) and crashes as a fire begins, the fire never to
// complete, so that b's reshard as the new leader comes at b's next fire
// rather than between fires (where b would gain the item by the catch-up,
// not by a proof); b's first proof after it fails once.
func TestClusterAFireRetriedAfterAFailedProofMakesUpTheGap(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := job.Config{Name: "retry", Cron: "*/5 * * * * *", ShardingTotalCount: 1}
	// Once armed, the first plain fire's run (a's: it holds the item)
	// hangs until the crash cancels it.
	var hang, hung atomic.Bool
	begun := make(chan struct{})
	rec.holdFor = func(sc job.ShardingContext) time.Duration {
		if hang.Load() && sc.Kind == job.KindFire && hung.CompareAndSwap(false, true) {
			close(begun)
			return time.Minute
		}
		return 0
	}
	start := time.Now()
	a := startInstance(t, ns, "a", cfg, rec, job.WithRecordInterval(time.Minute))
	rec.waitFires(t, start, 1, 1, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wrap *failProofOnce
	rc, s := connectVia(t, ctx, ns, "b", func(rc regcenter.Center) regcenter.Center {
		wrap = &failProofOnce{Center: rc}
		return wrap
	}, job.WithRecordInterval(time.Minute))
	if err := s.Add(ctx, cfg, rec.job("b")); err != nil {
		t.Fatal(err)
	}
	running(t, ctx, "b", rc, s)
	rec.waitFires(t, time.Now(), 1, 1, 30*time.Second)
	hang.Store(true)
	select {
	case <-begun:
	case <-ctx.Done():
		t.Fatal("a's next fire did not begin")
	}
	wrap.armed.Store(true)
	crashed := time.Now()
	a.crash(t)
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if r.server == "b" && r.begin.After(crashed) {
				return true
			}
		}
		return false
	})
	if !wrap.hit.Load() {
		t.Fatal("b's first fire after the crash proved no assignment that gives it the item: the case this test makes did not happen")
	}
	rec.waitFires(t, time.Now(), 1, 1, 30*time.Second)
	makeUps := 0
	for _, r := range rec.snapshot() {
		if r.server == "b" && r.kind != job.KindFire {
			makeUps++
			t.Logf("b made up fires %s–%s (%s)", r.fire.Format("15:04:05"), r.through.Format("15:04:05"), r.kind)
		}
	}
	if makeUps == 0 {
		t.Error("b made up nothing after a's crash: the fires a ran unrecorded were not made up")
	}
}
