package job

import (
	"context"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// watchSignal is a Center that tells, on watched, the path of every
// WatchNow once the watch is armed.
type watchSignal struct {
	regcenter.Center
	watched chan string
}

func (w *watchSignal) WatchNow(ctx context.Context, p string, kind regcenter.WatchKind, fn func(regcenter.Event)) (regcenter.WatchState, func(), error) {
	st, cancel, err := w.Center.WatchNow(ctx, p, kind, fn)
	select {
	case w.watched <- p:
	default:
	}
	return st, cancel, err
}

// A scheduled fire that finds its item's mark held by another run waits
// for that mark to go, marks the item, and then reads the item's record
// again: the other run may have stood for this very fire (an instance's
// make-up run through it, reserved ahead of it) and completed it meanwhile.
// Run as a plain fire it would run a completed fire twice — a chaos run on
// PostgreSQL did, after a full outage sent a former owner's make-up run
// through the owner's next fire.
func TestAFireThatWaitedOutAnotherRunsMarkReadsTheRecordAgain(t *testing.T) {
	defer func(d time.Duration) { markGoneWait = d }(markGoneWait)
	markGoneWait = time.Minute // the test deletes the mark once the wait's watch is armed
	zc := zktest.Start(t)
	rcfg := regcenter.Config{Servers: zc.Servers(), Namespace: "waitedout"}
	sig := &watchSignal{Center: connectOne(t, rcfg), watched: make(chan string, 16)}
	noop := SimpleFunc(func(context.Context, ShardingContext) error { return nil })
	// Yearly: no scheduled fire of the job's own comes during the test.
	_, r := runOneJob(t, sig, Config{Name: "j", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}, noop)
	other := connectOne(t, rcfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	running, completed := r.paths.ItemNode(0, layout.Running), r.paths.ItemNode(0, layout.Completed)
	if err := other.EnsurePath(ctx, r.paths.Item(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(ctx, running, []byte(`{"server":"other"}`), regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	for len(sig.watched) > 0 {
		<-sig.watched // the registration's own watches
	}
	at := time.Date(2027, 1, 1, 0, 0, 0, 0, time.Local)
	f := &fire{Sess: r.rc.Session(), Job: r.config().fireJob(), At: at, Kind: book.Fire, Items: []int{0}}
	type result struct {
		marked []int
		err    error
	}
	done := make(chan result, 1)
	go func() { // waited for below
		m, err := r.active().firer.Mark(ctx, f, nil, nil)
		done <- result{m, err}
	}()
	for p := range sig.watched {
		if p == running {
			break
		}
	}
	// The other run completes this very fire, and its mark goes.
	rec := stored.Completed{Server: "other", Fire: at.UnixMilli(), Ran: [][2]int64{{at.UnixMilli(), at.UnixMilli()}}, Kind: "misfire"}
	if err := other.Multi(ctx, regcenter.CreateOp{Path: completed, Data: rec.Marshal(), Mode: regcenter.Persistent},
		regcenter.DeleteOp{Path: running, Version: -1}); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || len(res.marked) != 1 {
		t.Fatalf("marking after the other run's mark went: marked %v, err %v", res.marked, res.err)
	}
	f.Items = res.marked
	if left := r.active().firer.RecheckUnrecorded(f); len(left) != 0 {
		t.Fatalf("the fire still runs items %v, which the other run completed for this very fire", left)
	}
}
