package alert

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeTimers stands for a clock's timers: fire runs every timer due by t.
type fakeTimers struct {
	mu     sync.Mutex
	timers map[*fakeTimer]bool
}

type fakeTimer struct {
	at time.Time
	f  func()
}

func (ft *fakeTimers) afterFunc(at time.Time, f func()) func() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t := &fakeTimer{at: at, f: f}
	ft.timers[t] = true
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		was := ft.timers[t]
		delete(ft.timers, t)
		return was
	}
}

func (ft *fakeTimers) fire(now time.Time) {
	ft.mu.Lock()
	var due []*fakeTimer
	for t := range ft.timers {
		if !t.at.After(now) {
			due = append(due, t)
			delete(ft.timers, t)
		}
	}
	ft.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

func (ft *fakeTimers) pending() int {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return len(ft.timers)
}

// A fire gets one timer however many of its runs begin here; the timer
// goes when the last run ends in time, and queues the fire once when it
// expires with runs still going.
func TestBookLateTimers(t *testing.T) {
	ft := &fakeTimers{timers: map[*fakeTimer]bool{}}
	b := NewBook(Options{AfterFunc: ft.afterFunc, Now: time.Now})
	b.Set("j", Policy{Late: 10 * time.Second})
	<-b.kick // the entry's publication, not run here
	fire := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	b.Begin("j", fire)
	b.Begin("j", fire)
	if ft.pending() != 1 {
		t.Fatalf("%d timers for one fire, want 1", ft.pending())
	}
	b.End("j", fire, true, fire.Add(time.Second))
	b.End("j", fire, true, fire.Add(2*time.Second))
	if ft.pending() != 0 {
		t.Fatalf("%d timers after the fire's runs ended, want 0", ft.pending())
	}
	if got := b.LastSuccess("j"); !got.Equal(fire.Add(2 * time.Second)) {
		t.Errorf("last success %v", got)
	}

	next := fire.Add(time.Minute)
	b.Begin("j", next)
	b.Begin("j", next)
	ft.fire(next.Add(10 * time.Second))
	b.End("j", next, false, next.Add(11*time.Second))
	select {
	case task := <-b.work:
		if task.job != "j" || !task.fire.Equal(next) || task.bound != 10*time.Second {
			t.Errorf("queued %+v", task)
		}
	default:
		t.Fatal("the late fire was not queued")
	}
	if len(b.work) != 0 {
		t.Errorf("%d more tasks queued, want the fire once", len(b.work))
	}

	// No late bound: nothing armed.
	b.Set("k", Policy{NotRunFor: time.Hour})
	b.Begin("k", fire)
	if ft.pending() != 0 {
		t.Errorf("a job without a late bound armed a timer")
	}
	b.Forget("j")
	b.Begin("j", fire)
	if ft.pending() != 0 {
		t.Errorf("a forgotten job armed a timer")
	}
}

func TestEntryDue(t *testing.T) {
	h := time.Hour.Milliseconds()
	for _, tc := range []struct {
		e    EntryValue
		want int64
	}{
		{EntryValue{NotRunFor: 0, Since: 5}, 0},
		{EntryValue{NotRunFor: 8 * h, Since: 0}, 9 * h},
		{EntryValue{NotRunFor: 8 * h, Since: 0, Success: 2 * h}, 11 * h},
		{EntryValue{NotRunFor: 8 * h, Since: 0, Success: 2 * h, Alerted: 11 * h}, 19 * h},
	} {
		got := tc.e.Due()
		if tc.want == 0 && !got.IsZero() || tc.want != 0 && got.UnixMilli() != tc.want {
			t.Errorf("%+v: due %v, want %d ms", tc.e, got, tc.want)
		}
	}
	for _, bad := range []string{"{", `{"notRunFor":-1}`, `"x"`, string(make([]byte, 5000))} {
		if _, err := DecodeEntry([]byte(bad)); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%.20q: %v, want ErrBadEntry", bad, err)
		}
	}
}
