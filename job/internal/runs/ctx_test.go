package runs

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type runCtxKey struct{}

func newCtx(parent context.Context) *Ctx { c := NewCtx(parent); return &c }

// isDone reports whether ch is closed, waiting at most a second for it.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(time.Second):
		return false
	}
}

func TestCtxEndsWithTheRun(t *testing.T) {
	for _, askFirst := range []bool{false, true} {
		parent, cancelParent := context.WithCancelCause(context.WithValue(context.Background(), runCtxKey{}, "v"))
		c := newCtx(parent)
		if askFirst {
			select {
			case <-c.Done():
				t.Fatal("done before the run ended")
			default:
			}
		}
		if err := c.Err(); err != nil {
			t.Fatalf("askFirst=%v: Err while running = %v", askFirst, err)
		}
		if c.Value(runCtxKey{}) != "v" {
			t.Fatalf("askFirst=%v: parent's value lost", askFirst)
		}
		child, cancelChild := context.WithTimeout(c, time.Hour)
		stopped := make(chan struct{})
		context.AfterFunc(c, func() { close(stopped) })
		c.End()
		if !isDone(c.Done()) || !isDone(child.Done()) || !isDone(stopped) {
			t.Fatalf("askFirst=%v: run's end did not reach Done, a derived context and AfterFunc", askFirst)
		}
		cancelParent(errors.New("later"))
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("askFirst=%v: Err after end = %v, want context.Canceled", askFirst, err)
		}
		if cause := context.Cause(c); !errors.Is(cause, context.Canceled) {
			t.Fatalf("askFirst=%v: Cause after end = %v, want context.Canceled", askFirst, cause)
		}
		cancelChild()
	}
}

func TestCtxFollowsItsParent(t *testing.T) {
	lost := errors.New("session lost")
	for _, askFirst := range []bool{false, true} {
		parent, cancelParent := context.WithCancelCause(context.Background())
		c := newCtx(parent)
		if askFirst {
			_ = c.Done()
		}
		cancelParent(lost)
		if !isDone(c.Done()) {
			t.Fatalf("askFirst=%v: parent's end did not reach Done", askFirst)
		}
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("askFirst=%v: Err = %v, want context.Canceled", askFirst, err)
		}
		if cause := context.Cause(c); cause != lost {
			t.Fatalf("askFirst=%v: Cause = %v, want the parent's", askFirst, cause)
		}
		c.End()
		if cause := context.Cause(c); cause != lost {
			t.Fatalf("askFirst=%v: Cause after end = %v, want the parent's still", askFirst, cause)
		}
	}
}

// Err never changes once non-nil, and agrees with Done, whatever order
// the run's end, the parent's and the first Done come in.
func TestCtxStaysConsistentUnderRaces(t *testing.T) {
	for i := range 200 {
		// The parent ends with context.DeadlineExceeded, so that an Err
		// switching between the two ends would show.
		parent, cancelParent := context.WithTimeout(context.Background(), time.Duration(i%40)*time.Microsecond)
		defer cancelParent()
		c := newCtx(parent)
		var wg sync.WaitGroup
		wg.Go(c.End)
		errs := make(chan error, 1)
		wg.Go(func() {
			var first error
			for range 50 {
				err := c.Err()
				if first != nil && err != first {
					errs <- errors.New("Err changed after it was set")
					return
				}
				first = err
			}
		})
		wg.Go(func() {
			<-c.Done()
			if c.Err() == nil {
				errs <- errors.New("Done closed with Err nil")
			}
		})
		wg.Wait()
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
}
