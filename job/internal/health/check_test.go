package health

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
)

// Failures failed checks in a row write the instance's offline mark and
// report it once; the first check that passes removes it and reports that.
func TestChecksMarkOfflineAfterFailuresAndOnlineAtAPass(t *testing.T) {
	rc := newMemCenter()
	outcomes := []error{errors.New("a"), nil, errors.New("b"), errors.New("c"), errors.New("d"), errors.New("e"), nil}
	type event struct {
		offline bool
		err     error
		marked  bool
	}
	var events []event
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	Checks{
		Every: time.Millisecond,
		Check: func(context.Context) error {
			if n == len(outcomes) {
				cancel()
				return nil
			}
			n++
			return outcomes[n-1]
		},
		Failures: 3,
		RC:       rc,
		Server:   "s1",
		Timeout:  time.Second,
		Offline: func(err error) {
			_, marked := rc.node(layout.OfflineEntry("s1"))
			events = append(events, event{true, err, marked})
		},
		Online: func() {
			_, marked := rc.node(layout.OfflineEntry("s1"))
			events = append(events, event{false, nil, marked})
		},
		Log: slog.New(slog.DiscardHandler),
	}.Run(ctx)
	want := []event{{true, outcomes[4], true}, {false, nil, false}}
	if len(events) != len(want) || events[0] != want[0] || events[1] != want[1] {
		t.Fatalf("events %+v, want %+v", events, want)
	}
}
