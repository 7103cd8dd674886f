package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
)

// TestRecordOutputReachesTheListeners runs a job on a real registry whose
// items record outputs in several ways, and checks what the listeners are
// handed: the last output recorded, also for a failed run, nothing for a
// run that recorded none, a refused output changing nothing; and that the
// run's context refuses an output once the run has returned.
func TestRecordOutputReachesTheListeners(t *testing.T) {
	ns := namespace(t)
	var mu sync.Mutex
	got := map[int]listener.Execution{}
	ctxs := map[int]context.Context{}
	errs := map[int][]error{}
	seen := make(chan struct{}, 1)
	l := listener.Funcs{After: func(e listener.Execution) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := got[e.Item]; !ok {
			got[e.Item] = e
		}
		if len(got) == 3 {
			select {
			case seen <- struct{}{}:
			default:
			}
		}
	}}
	work := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		var es []error
		var fail error
		switch sc.Item {
		case 0:
			es = append(es, job.RecordOutput(ctx, map[string]int{"n": 1}))
			// A context derived from the run's, and the last call wins.
			dctx, cancel := context.WithTimeout(ctx, time.Minute)
			es = append(es, job.RecordOutput(dctx, map[string]any{"n": 2, "html": "<b>&</b>"}))
			cancel()
			// Refused: too large, and not JSON; the output stays n=2.
			es = append(es, job.RecordOutput(ctx, strings.Repeat("x", job.MaxOutputSize)))
			es = append(es, job.RecordOutput(ctx, json.RawMessage(`{"broken":`)))
		case 1:
			es = append(es, job.RecordOutput(ctx, "partial"))
			fail = errors.New("item 1 failed")
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := ctxs[sc.Item]; !ok {
			ctxs[sc.Item], errs[sc.Item] = ctx, es
		}
		return fail
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "o1", job.WithListener(l))
	in := &instance{id: "o1", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })
	if err := s.Add(ctx, everySecond("outputs", 3), work); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-time.After(60 * time.Second):
		t.Fatal("no execution of every item within 60s")
	}
	mu.Lock()
	defer mu.Unlock()

	e0 := errs[0]
	if len(e0) != 4 || e0[0] != nil || e0[1] != nil {
		t.Fatalf("item 0's records: %v", e0)
	}
	if !errors.Is(e0[2], job.ErrOutputTooLarge) {
		t.Errorf("an output of %d bytes: %v, want ErrOutputTooLarge", job.MaxOutputSize+2, e0[2])
	}
	for _, n := range []int{job.MaxOutputSize + 2, job.MaxOutputSize} {
		if !strings.Contains(e0[2].Error(), strconv.Itoa(n)) {
			t.Errorf("the error %q does not name %d", e0[2], n)
		}
	}
	if e0[3] == nil || errors.Is(e0[3], job.ErrOutputTooLarge) {
		t.Errorf("broken JSON: %v, want an encoding error", e0[3])
	}
	if want := `{"html":"<b>&</b>","n":2}`; string(got[0].Output) != want {
		t.Errorf("item 0's output %s, want %s", got[0].Output, want)
	}
	if got[1].Err == nil || string(got[1].Output) != `"partial"` {
		t.Errorf("item 1: err %v, output %s; want a failure with output \"partial\"", got[1].Err, got[1].Output)
	}
	if got[2].Output != nil {
		t.Errorf("item 2 recorded nothing, the listener got %s", got[2].Output)
	}
	// The run has returned: its context takes no more output.
	if err := job.RecordOutput(ctxs[0], "late"); !errors.Is(err, job.ErrOutputOutsideRun) {
		t.Errorf("RecordOutput after the run: %v, want ErrOutputOutsideRun", err)
	}
}

// TestRecordOutputOutsideARun: a context no run gave is refused with
// ErrOutputOutsideRun, whatever the value.
func TestRecordOutputOutsideARun(t *testing.T) {
	for _, v := range []any{"x", nil, map[string]int{"a": 1}} {
		if err := job.RecordOutput(context.Background(), v); !errors.Is(err, job.ErrOutputOutsideRun) {
			t.Errorf("RecordOutput(Background, %v) = %v, want ErrOutputOutsideRun", v, err)
		}
	}
}
