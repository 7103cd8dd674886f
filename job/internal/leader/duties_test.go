package leader

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/reshard"
)

func leading() bool    { return true }
func notLeading() bool { return false }

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A change of leadership closes the channel Changed returned before it,
// and only that one.
func TestBumpGenClosesTheChannelOfTheLastGeneration(t *testing.T) {
	d := NewDuties()
	first := d.Changed()
	if closed(first) {
		t.Fatal("closed before any change of leadership")
	}
	if d.Changed() != first {
		t.Fatal("Changed returned another channel with no change of leadership")
	}
	d.BumpGen()
	if !closed(first) {
		t.Error("BumpGen left the last generation's channel open")
	}
	second := d.Changed()
	if closed(second) {
		t.Error("the new generation's channel is closed already")
	}
	d.BumpGen()
	if !closed(second) {
		t.Error("the second BumpGen left its generation's channel open")
	}
}

// counter is a watch's cancel that counts its calls.
type counter struct{ n int }

func (c *counter) cancel() { c.n++ }

func TestWatchesAreArmedOnceAndDroppedTogether(t *testing.T) {
	tests := []struct {
		name    string
		armed   []string // armed with ArmOnce before the step
		step    func(d *Duties, c *counter) bool
		want    bool     // what the step returns
		wantKey []string // the keys Has reports afterwards
	}{
		{
			name: "Keep records a new key while leading",
			step: func(d *Duties, c *counter) bool { return d.Keep(RequestWatch, c.cancel, leading) },
			want: true, wantKey: []string{RequestWatch},
		},
		{
			name:  "Keep refuses a key armed already",
			armed: []string{RequestWatch},
			step:  func(d *Duties, c *counter) bool { return d.Keep(RequestWatch, c.cancel, leading) },
			want:  false, wantKey: []string{RequestWatch},
		},
		{
			name: "Keep refuses once leadership is gone",
			step: func(d *Duties, c *counter) bool { return d.Keep(RequestWatch, c.cancel, notLeading) },
			want: false,
		},
		{
			name: "ArmOnce arms a missing key",
			step: func(d *Duties, c *counter) bool {
				d.ArmOnce(ServersWatch, func() func() { return c.cancel })
				return true
			},
			want: true, wantKey: []string{ServersWatch},
		},
		{
			name:  "ArmOnce leaves an armed key alone",
			armed: []string{ServersWatch},
			step: func(d *Duties, c *counter) bool {
				armed := false
				d.ArmOnce(ServersWatch, func() func() { armed = true; return c.cancel })
				return armed
			},
			want: false, wantKey: []string{ServersWatch},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDuties()
			var before counter
			for _, k := range tt.armed {
				d.ArmOnce(k, func() func() { return before.cancel })
			}
			var c counter
			if got := tt.step(d, &c); got != tt.want {
				t.Errorf("step = %v, want %v", got, tt.want)
			}
			for _, k := range []string{ServersWatch, RequestWatch} {
				if got, want := d.Has(k), slices.Contains(tt.wantKey, k); got != want {
					t.Errorf("Has(%q) = %v, want %v", k, got, want)
				}
			}
			if c.n != 0 || before.n != 0 {
				t.Errorf("Duties called cancels: the step's %d times, the armed ones' %d", c.n, before.n)
			}
			dropped := d.DropAll()
			if len(dropped) != len(tt.wantKey) {
				t.Errorf("DropAll returned %d cancels, want %d", len(dropped), len(tt.wantKey))
			}
			for k, cancel := range dropped {
				if !slices.Contains(tt.wantKey, k) {
					t.Errorf("DropAll returned the cancel of %q, not armed", k)
				}
				cancel()
			}
			for _, k := range []string{ServersWatch, RequestWatch} {
				if d.Has(k) {
					t.Errorf("Has(%q) after DropAll", k)
				}
			}
			if got := c.n + before.n; got != len(tt.wantKey) {
				t.Errorf("%d cancels called after DropAll, want %d", got, len(tt.wantKey))
			}
		})
	}
}

func TestWatchServersFollowsTheServerList(t *testing.T) {
	online := map[string]bool{layout.Status: true}
	tests := []struct {
		name      string
		watched   []string // servers watched before
		servers   reshard.Servers
		leading   func() bool
		sharded   []string
		wantOK    bool
		wantArmed []string // servers armed by this call
		wantGone  []string // servers whose watch this call cancelled
	}{
		{
			name:    "arms each new server",
			servers: reshard.Servers{"b": online, "a": online},
			leading: leading, sharded: []string{"a"},
			wantOK: true, wantArmed: []string{"a", "b"},
		},
		{
			name:    "keeps the watched and cancels the gone",
			watched: []string{"a", "gone"},
			servers: reshard.Servers{"a": online, "c": {}},
			leading: leading, sharded: []string{"a", "c"},
			wantOK: true, wantArmed: []string{"c"}, wantGone: []string{"gone"},
		},
		{
			name:    "does nothing once leadership is gone",
			watched: []string{"gone"},
			servers: reshard.Servers{"a": online},
			leading: notLeading, sharded: []string{"a"},
			wantOK: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDuties()
			var keys counter
			d.ArmOnce(ServersWatch, func() func() { return keys.cancel })
			if !d.Keep(RequestWatch, keys.cancel, leading) {
				t.Fatal("Keep refused the request watch")
			}
			var gone []string
			for _, sv := range tt.watched {
				d.ArmOnce(sv, func() func() { return func() { gone = append(gone, sv) } })
			}
			d.SetSharded(tt.sharded)
			var armed []string
			last, ok := d.WatchServers(tt.leading, tt.servers, func(sv string) func() {
				armed = append(armed, sv)
				return func() {}
			})
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			var wantLast []string
			if tt.wantOK {
				wantLast = tt.sharded
			}
			if !reflect.DeepEqual(last, wantLast) {
				t.Errorf("last sharded = %v, want %v", last, wantLast)
			}
			if !reflect.DeepEqual(armed, tt.wantArmed) {
				t.Errorf("armed %v, want %v", armed, tt.wantArmed)
			}
			if !reflect.DeepEqual(gone, tt.wantGone) {
				t.Errorf("cancelled %v, want %v", gone, tt.wantGone)
			}
			if keys.n != 0 || !d.Has(ServersWatch) || !d.Has(RequestWatch) {
				t.Error("WatchServers dropped the server list's or the requests' watch")
			}
			for sv := range tt.servers {
				if tt.wantOK && !d.Has(sv) {
					t.Errorf("server %s not watched", sv)
				}
			}
		})
	}
}

// The turn is held by one at a time: a second taker waits for its
// release, or for its context's end.
func TestTheTurnIsOneAtATime(t *testing.T) {
	d := NewDuties()
	if !d.TryAcquire() {
		t.Fatal("TryAcquire failed with no holder")
	}
	if d.TryAcquire() {
		t.Fatal("TryAcquire took a held turn")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire of a held turn with an ended context = %v, want %v", err, context.Canceled)
	}
	got := make(chan error, 1)
	go func() { got <- d.Acquire(context.Background()) }()
	select {
	case err := <-got:
		t.Fatalf("Acquire returned %v while the turn was held", err)
	case <-time.After(20 * time.Millisecond):
	}
	d.Release()
	if err := <-got; err != nil {
		t.Fatalf("Acquire after a release = %v", err)
	}
	d.Release()
	if !d.TryAcquire() {
		t.Error("TryAcquire failed once the turn was released")
	}
	d.Release()
}
