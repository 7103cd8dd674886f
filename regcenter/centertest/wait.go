package centertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// The bounds only say how long a failure takes to show: a machine busy
// with other work (CI beside a CPU-heavy process) stretches every wait and
// request of a passing case, and no case asserts a speed through them.
const (
	// waitTimeout bounds every wait of a case.
	waitTimeout = 60 * time.Second
	// callTimeout bounds every request a case makes.
	callTimeout = 90 * time.Second
	// pollEvery is how often a wait on state re-reads it.
	pollEvery = 10 * time.Millisecond
)

// ctxFor returns a context for a case's requests, ended when tb ends and
// at most callTimeout from now.
func ctxFor(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(tb.Context(), callTimeout)
	tb.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it reports true, failing tb with what (and
// the last reason cond gave) after waitTimeout.
func eventually(tb testing.TB, what string, cond func() (bool, string)) {
	tb.Helper()
	eventuallyWithin(tb, waitTimeout, what, cond)
}

// eventuallyWithin is eventually with a deadline of its own.
func eventuallyWithin(tb testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	tb.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return
		}
		select {
		case <-deadline.C:
			tb.Fatalf("%s: not within %v (last: %s)", what, within, why)
		case <-tb.Context().Done():
			tb.Fatalf("%s: test ended while waiting (last: %s)", what, why)
		case <-tick.C:
		}
	}
}

// recorder collects what a callback is given (watch or session events)
// without blocking it, and lets a case wait for what it expects.
type recorder[E any] struct {
	mu   sync.Mutex
	got  []E
	wake chan struct{}
}

func newRecorder[E any]() *recorder[E] {
	return &recorder[E]{wake: make(chan struct{}, 1)}
}

// add records e; it is the callback given to the center.
func (r *recorder[E]) add(e E) {
	r.mu.Lock()
	r.got = append(r.got, e)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// all returns a copy of what was recorded so far.
func (r *recorder[E]) all() []E {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// len returns how many were recorded so far.
func (r *recorder[E]) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// await waits until cond holds for everything recorded so far and returns
// it, failing tb with what after waitTimeout.
func (r *recorder[E]) await(tb testing.TB, what string, cond func([]E) bool) []E {
	tb.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		got := r.all()
		if cond(got) {
			return got
		}
		select {
		case <-r.wake:
		case <-deadline.C:
			tb.Fatalf("%s: not within %v; got %v", what, waitTimeout, got)
		case <-tb.Context().Done():
			tb.Fatalf("%s: test ended while waiting; got %v", what, got)
		}
	}
}

// awaitN waits until at least n were recorded and returns them all.
func (r *recorder[E]) awaitN(tb testing.TB, n int, what string) []E {
	tb.Helper()
	return r.await(tb, what, func(got []E) bool { return len(got) >= n })
}

// types lists the types of evs, for messages and comparisons.
func types(evs []regcenter.Event) []regcenter.EventType {
	out := make([]regcenter.EventType, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// seenAfter waits, after a change was made, until an event delivered after
// event number from (the recorder's len before the change) is followed by
// a re-read (check) that shows the change: what a subscriber that re-reads
// on every event relies on. check returns whether the state is as expected
// and what it saw, or an error when it could not read (the read is then
// retried, as a subscriber would); a re-read that shows older state needs
// another event. It fails tb after within.
func seenAfter(tb testing.TB, within time.Duration, r *recorder[regcenter.Event], from int, what string, check func() (bool, string, error)) {
	tb.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	last := "no event after the change"
	retry := false // an event came but the re-read failed
	for {
		if r.len() > from || retry {
			from = r.len()
			ok, saw, err := check()
			switch {
			case ok:
				return
			case err != nil:
				retry, last = true, fmt.Sprintf("re-read failed: %v", err)
			default:
				retry, last = false, fmt.Sprintf("events %v, then a re-read saw %s", types(r.all()), saw)
			}
		}
		select {
		case <-r.wake:
		case <-tick.C:
		case <-deadline.C:
			tb.Fatalf("%s: not within %v (%s)", what, within, last)
		case <-tb.Context().Done():
			tb.Fatalf("%s: test ended while waiting (%s)", what, last)
		}
	}
}

// sorted returns a sorted copy of s.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool { return slices.Equal(sorted(a), sorted(b)) }

// mustCreate creates p or fails tb.
func mustCreate(tb testing.TB, c regcenter.Center, p string, data []byte, mode regcenter.Mode) string {
	tb.Helper()
	got, err := c.Create(ctxFor(tb), p, data, mode)
	if err != nil {
		tb.Fatalf("Create(%s): %v", p, err)
	}
	return got
}

// mustGet reads p or fails tb.
func mustGet(tb testing.TB, c regcenter.Center, p string) ([]byte, regcenter.Stat) {
	tb.Helper()
	data, st, err := c.Get(ctxFor(tb), p)
	if err != nil {
		tb.Fatalf("Get(%s): %v", p, err)
	}
	return data, st
}

// mustChildren lists p's children or fails tb.
func mustChildren(tb testing.TB, c regcenter.Center, p string) []string {
	tb.Helper()
	kids, err := c.Children(ctxFor(tb), p)
	if err != nil {
		tb.Fatalf("Children(%s): %v", p, err)
	}
	return kids
}

// exists reports whether p exists, failing tb on an error.
func exists(tb testing.TB, c regcenter.Center, p string) bool {
	tb.Helper()
	ok, _, err := c.Exists(ctxFor(tb), p)
	if err != nil {
		tb.Fatalf("Exists(%s): %v", p, err)
	}
	return ok
}

// gone returns a condition for eventually: p does not exist, as c sees it.
func gone(ctx context.Context, c regcenter.Center, p string) func() (bool, string) {
	return func() (bool, string) {
		ok, st, err := c.Exists(ctx, p)
		switch {
		case err != nil:
			return false, err.Error()
		case ok:
			return false, fmt.Sprintf("%s still exists (owner 0x%x)", p, st.EphemeralOwner)
		}
		return true, ""
	}
}

// quote renders data for messages.
func quote(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%q... (%d bytes)", b[:40], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// joined renders names for messages.
func joined(s []string) string { return "[" + strings.Join(s, " ") + "]" }
