package execute

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/job/internal/retry"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/job/internal/tracing"
	"github.com/shardjob/shardjob/listener"
)

// TestOf: a run's facts come from its event, its items and its fires;
// its retry parts only with a policy, and the note of the count only for
// a monitored run of one item, written where the job's paths say.
func TestOf(t *testing.T) {
	ctx, rc := roomtest.ZooKeeper(t, "execute")
	paths := layout.Job("of")
	var retries atomic.Int64
	life := context.Background()
	j := &Job{Name: "of", Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Life: life, Retries: &retries, Registry: rc, Paths: paths}
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	through := at.Add(time.Minute)
	ev := listener.Execution{Job: "of", TaskID: "of@1", ServerID: "s1", Item: 3, Kind: "failover", FireTime: at}
	pol := retry.Policy{Attempts: 2, Backoff: time.Second, MaxBackoff: time.Second}
	sched := every(time.Minute)

	run := j.Of(ev, nil, 3, 3, through, retry.Policy{}, sched, true, true)
	want := tracing.RunFacts{Job: "of", Kind: "failover", ServerID: "s1", First: 3, Last: 3, At: at, Through: through}
	if !reflect.DeepEqual(run.Event, ev) || run.Facts != want || run.Log != j.Log || run.Life != life || run.Retries != &retries {
		t.Fatalf("no policy: %+v", run)
	}
	if run.Schedule != nil || run.Past || run.Note != nil || run.Retry.Attempts != 0 {
		t.Fatalf("no policy, retry parts set: schedule %v, past %v, note set %v", run.Schedule, run.Past, run.Note != nil)
	}

	for _, c := range []struct {
		name        string
		first, last int
		monitored   bool
		note        bool
	}{
		{"a monitored item notes its count", 3, 3, true, true},
		{"an unmonitored item does not", 3, 3, false, false},
		{"a range does not", 3, 5, true, false},
	} {
		run := j.Of(ev, nil, c.first, c.last, through, pol, sched, true, c.monitored)
		if run.Retry != pol || run.Schedule != sched || !run.Past || run.Facts.First != c.first || run.Facts.Last != c.last {
			t.Errorf("%s: %+v", c.name, run)
		}
		if (run.Note != nil) != c.note {
			t.Errorf("%s: note set %v, want %v", c.name, run.Note != nil, c.note)
		}
	}

	if err := rc.EnsurePath(ctx, path.Dir(paths.ItemNode(3, layout.Retry))); err != nil {
		t.Fatal(err)
	}
	run = j.Of(ev, nil, 3, 3, through, pol, sched, false, true)
	if err := run.Note(ctx, 2); err != nil {
		t.Fatal(err)
	}
	n, err := marks.ReadRetry(ctx, rc, paths, 3, at, nil)
	if err != nil || n != 2 {
		t.Fatalf("the count noted: %d, %v; want 2", n, err)
	}
}

// TestBounded: a call under no timeout gets ctx itself; under one, a
// bounded context, and fails with the sentinel when it outlives it,
// whatever it returned; an end of ctx itself is not a timeout.
func TestBounded(t *testing.T) {
	errTimeout := errors.New("timed out")
	errJob := errors.New("job failed")
	type key struct{}
	base := context.WithValue(context.Background(), key{}, 1)

	var got context.Context
	err := Bounded(base, 0, errTimeout, func(ctx context.Context, bounded bool) error {
		if bounded {
			t.Error("no timeout: bounded")
		}
		got = ctx
		return errJob
	})
	if got != base || err != errJob {
		t.Fatalf("no timeout: ctx %v, err %v", got, err)
	}

	for _, c := range []struct {
		name    string
		ret     error
		wait    bool
		want    string
		timeout bool
	}{
		{"returns in time", errJob, false, "job failed", false},
		{"returns nil in time", nil, false, "", false},
		{"outlives its deadline", nil, true, "timed out after 10ms", true},
		{"outlives its deadline, failing", errJob, true, "timed out after 10ms: job failed", true},
	} {
		err := Bounded(base, 10*time.Millisecond, errTimeout, func(ctx context.Context, bounded bool) error {
			if !bounded || ctx.Value(key{}) != 1 {
				t.Errorf("%s: bounded %v, a context not of ctx", c.name, bounded)
			}
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("%s: no deadline", c.name)
			}
			if c.wait {
				<-ctx.Done()
			}
			return c.ret
		})
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != c.want || errors.Is(err, errTimeout) != c.timeout || (c.ret != nil && !errors.Is(err, c.ret)) {
			t.Errorf("%s: err %v, want %q (timeout %v)", c.name, err, c.want, c.timeout)
		}
	}

	// ctx itself ends first, even with the sentinel as its cause: the
	// call's error as it is.
	cctx, cancel := context.WithCancel(base)
	err = Bounded(cctx, time.Hour, errTimeout, func(ctx context.Context, _ bool) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, errTimeout) || strings.Contains(err.Error(), "after") {
		t.Fatalf("ctx ended: %v", err)
	}
	tctx, tcancel := context.WithTimeoutCause(base, 10*time.Millisecond, errTimeout)
	defer tcancel()
	err = Bounded(tctx, time.Hour, errTimeout, func(ctx context.Context, _ bool) error {
		<-ctx.Done()
		return errJob
	})
	if err != errJob {
		t.Fatalf("ctx timed out: %v, want the call's error", err)
	}
}
