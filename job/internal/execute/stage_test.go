package execute

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/alert"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/retry"
	"github.com/shardjob/shardjob/listener"
)

var (
	errClosed   = errors.New("closed")
	errReplaced = errors.New("replaced")
	errFailed   = errors.New("failed")
)

// runCtx is a run's context in a test: cancel it with a cause, or as
// replaced.
type runCtx struct {
	context.Context
	cancel   context.CancelCauseFunc
	replaced atomic.Bool
	out      json.RawMessage
}

func newCtx() *runCtx {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &runCtx{Context: ctx, cancel: cancel}
}

func (c *runCtx) Replaced() bool              { return c.replaced.Load() }
func (c *runCtx) TakeOutput() json.RawMessage { return c.out }

// every fires at each multiple of d since the Unix epoch.
type every time.Duration

func (e every) Next(t time.Time) time.Time {
	d := time.Duration(e)
	return t.Truncate(d).Add(d)
}

type stageRig struct {
	stage   *Stage
	events  []listener.Execution
	now     time.Time
	life    context.CancelFunc
	retries atomic.Int64
	// waits receives each retry's wait: its time, and the channel to close.
	waits chan time.Time
	gate  chan struct{}
	// lifeCtx is the job's life, which life ends.
	lifeCtx context.Context
}

func newRig(t *testing.T) *stageRig {
	rig := &stageRig{now: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), waits: make(chan time.Time, 10), gate: make(chan struct{})}
	life, cancel := context.WithCancel(context.Background())
	rig.life = cancel
	t.Cleanup(cancel)
	rec := listener.Funcs{
		Before: func(e listener.Execution) { rig.events = append(rig.events, e) },
		After:  func(e listener.Execution) { rig.events = append(rig.events, e) },
	}
	rig.lifeCtx = life
	rig.stage = &Stage{
		Listeners: []listener.Listener{rec},
		Alerts:    alert.NewBook(alert.Options{Now: time.Now}),
		Now:       func() time.Time { return rig.now },
		Until: func(at time.Time) <-chan struct{} {
			rig.waits <- at
			return rig.gate
		},
		Closed:   errClosed,
		Replaced: func(err error) error { return errors.Join(errReplaced, err) },
	}
	return rig
}

func (rig *stageRig) run(ctx *runCtx, pol retry.Policy, first int, call Call) completion.Result {
	res := completion.Result{Item: 3, Fire: rig.now}
	run := Run{Event: listener.Execution{Job: "j", Item: 3, Kind: "fire", FireTime: rig.now}, Retry: pol, Schedule: every(time.Hour),
		Log: slog.New(slog.DiscardHandler), Life: rig.lifeCtx, Retries: &rig.retries}
	run.Facts.Through = rig.now
	rig.stage.Run(ctx, run, first, &res, call)
	return res
}

func TestOneAttemptTellsTheListenersAndTheOutcome(t *testing.T) {
	rig := newRig(t)
	ctx := newCtx()
	ctx.out = json.RawMessage(`{"n":1}`)
	res := rig.run(ctx, retry.Policy{}, 1, func(context.Context, int) error { return errFailed })
	if !errors.Is(res.Err, errFailed) || res.Halted != nil || res.End.IsZero() {
		t.Fatalf("result %+v", res)
	}
	if len(rig.events) != 2 || rig.events[0].Attempt != 1 || !rig.events[0].End.IsZero() ||
		!errors.Is(rig.events[1].Err, errFailed) || string(rig.events[1].Output) != `{"n":1}` {
		t.Fatalf("events %+v", rig.events)
	}
	if len(rig.waits) != 0 {
		t.Fatal("a job without a policy waited for a retry")
	}
}

func TestRetriesContinueTheCountAndStopOnSuccess(t *testing.T) {
	rig := newRig(t)
	close(rig.gate) // every wait is over at once
	var attempts []int
	res := rig.run(newCtx(), retry.Policy{Attempts: 5, Backoff: time.Second, MaxBackoff: time.Minute}, 2, func(_ context.Context, attempt int) error {
		attempts = append(attempts, attempt)
		if attempt < 4 {
			return errFailed
		}
		return nil
	})
	if res.Err != nil || len(attempts) != 3 || attempts[0] != 2 || attempts[2] != 4 {
		t.Fatalf("attempts %v, result %+v", attempts, res)
	}
	if rig.retries.Load() != 2 || len(rig.waits) != 2 {
		t.Fatalf("%d retries counted, %d waits", rig.retries.Load(), len(rig.waits))
	}
	if w := <-rig.waits; !w.Equal(rig.now.Add(2 * time.Second)) {
		t.Fatalf("the retry after attempt 2 waits until %v, want the backoff doubled once", w)
	}
}

func TestARetryYieldsToTheItemsNextFire(t *testing.T) {
	rig := newRig(t)
	calls := 0
	res := rig.run(newCtx(), retry.Policy{Attempts: 3, Backoff: 2 * time.Hour, MaxBackoff: 2 * time.Hour}, 1, func(context.Context, int) error {
		calls++
		return errFailed
	})
	if calls != 1 || !errors.Is(res.Err, errFailed) || len(rig.waits) != 0 {
		t.Fatalf("%d calls, %d waits, result %+v: the retry would start after the next fire", calls, len(rig.waits), res)
	}
}

// A backfill's run of a fire long past retries as a live one would now:
// its own next fire has long come, the item's next fire from now has not.
func TestAPastRunRetriesBeforeTheNextFireFromNow(t *testing.T) {
	rig := newRig(t)
	close(rig.gate)
	fire := rig.now.Add(-48 * time.Hour)
	res := completion.Result{Item: 3, Fire: fire}
	run := Run{Event: listener.Execution{Job: "j", Item: 3, Kind: "backfill", FireTime: fire}, Retry: retry.Policy{Attempts: 2, Backoff: time.Second, MaxBackoff: time.Minute},
		Schedule: every(time.Hour), Log: slog.New(slog.DiscardHandler), Life: rig.lifeCtx, Retries: &rig.retries}
	run.Facts.Through = fire
	calls := 0
	call := func(context.Context, int) error {
		if calls++; calls == 1 {
			return errFailed
		}
		return nil
	}
	rig.stage.Run(newCtx(), run, 1, &res, call)
	if calls != 1 {
		t.Fatalf("a past run not marked past: %d calls, want 1 (its next fire has come)", calls)
	}
	run.Past, calls = true, 0
	res = completion.Result{Item: 3, Fire: fire}
	rig.stage.Run(newCtx(), run, 1, &res, call)
	if calls != 2 || res.Err != nil {
		t.Fatalf("a past run: %d calls, result %+v; want a retry that succeeds", calls, res)
	}
}

func TestAWaitCutShort(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cut        func(rig *stageRig, ctx *runCtx)
		err, halts error
	}{
		{"by the run's context", func(_ *stageRig, ctx *runCtx) { ctx.cancel(context.DeadlineExceeded) }, errFailed, context.DeadlineExceeded},
		{"by a later fire", func(_ *stageRig, ctx *runCtx) { ctx.replaced.Store(true); ctx.cancel(errReplaced) }, errReplaced, nil},
		{"by the job's stop", func(rig *stageRig, _ *runCtx) { rig.life() }, errFailed, errClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newRig(t)
			ctx := newCtx()
			go func() {
				<-rig.waits
				tc.cut(rig, ctx)
			}()
			res := rig.run(ctx, retry.Policy{Attempts: 3, Backoff: time.Second, MaxBackoff: time.Second}, 1, func(context.Context, int) error { return errFailed })
			if !errors.Is(res.Err, tc.err) || !errors.Is(res.Halted, tc.halts) || (tc.halts == nil) != (res.Halted == nil) {
				t.Fatalf("result err %v halted %v; want %v, %v", res.Err, res.Halted, tc.err, tc.halts)
			}
			if tc.halts != nil && res.FailedAttempts != 1 {
				t.Fatalf("failed attempts %d, want 1: the next owner continues the count", res.FailedAttempts)
			}
			if rig.retries.Load() != 0 {
				t.Fatal("a retry cut short was counted")
			}
		})
	}
}

func TestARunCutShortIsNotRetried(t *testing.T) {
	rig := newRig(t)
	ctx := newCtx()
	res := rig.run(ctx, retry.Policy{Attempts: 3, Backoff: time.Second, MaxBackoff: time.Second}, 2, func(context.Context, int) error {
		ctx.cancel(errClosed)
		return errFailed
	})
	if !errors.Is(res.Halted, errClosed) || res.FailedAttempts != 1 || len(rig.waits) != 0 {
		t.Fatalf("result %+v, %d waits", res, len(rig.waits))
	}
}
