package job_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
)

// A job that runs past its Timeout fails: its context ends with
// ErrExecutionTimeout, the error is the item's, and the fire completes.
func TestTimeoutFailsTheExecution(t *testing.T) {
	ns := namespace(t)
	var mu sync.Mutex
	var errs []error
	l := listener.Funcs{After: func(e listener.Execution) {
		mu.Lock()
		errs = append(errs, e.Err)
		mu.Unlock()
	}}
	causes := make(chan error, 16)
	cfg := everySecond("slow", 2)
	cfg.Timeout = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "s1", job.WithListener(l))
	in := &instance{id: "s1", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })
	if err := s.Add(ctx, cfg, job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		<-ctx.Done()
		select {
		case causes <- context.Cause(ctx):
		default:
		}
		return ctx.Err()
	})); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-causes:
		if !errors.Is(c, job.ErrExecutionTimeout) {
			t.Fatalf("the item's context ended with %v, want ErrExecutionTimeout", c)
		}
	case <-ctx.Done():
		t.Fatal("no execution reached its timeout")
	}
	for {
		mu.Lock()
		n := len(errs)
		var first error
		if n > 0 {
			first = errs[0]
		}
		mu.Unlock()
		if n > 0 {
			if !errors.Is(first, job.ErrExecutionTimeout) || !errors.Is(first, context.DeadlineExceeded) {
				t.Fatalf("execution error %v, want ErrExecutionTimeout wrapping what the job returned", first)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no execution ended")
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The failed fire completed: its record carries the error.
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _, err := rc.Get(ctx, "/slow/execution/0/completed")
		if err == nil && strings.Contains(string(data), "timed out") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("completed node %q %v, want the timeout error recorded", data, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
