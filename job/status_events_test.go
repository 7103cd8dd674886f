package job_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// eventLog keeps the events a scheduler delivers.
type eventLog struct {
	mu  sync.Mutex
	evs []job.Event
}

func (l *eventLog) add(ev job.Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

// has reports whether an event of kind for job name satisfies ok.
func (l *eventLog) has(name string, kind job.EventKind, ok func(job.Event) bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.evs {
		if ev.Job == name && ev.Kind == kind && ok(ev) {
			return true
		}
	}
	return false
}

// kinds returns the kinds seen for job name, in order.
func (l *eventLog) kinds(name string) []job.EventKind {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []job.EventKind
	for _, ev := range l.evs {
		if ev.Job == name {
			out = append(out, ev.Kind)
		}
	}
	return out
}

func (l *eventLog) find(name string, kind job.EventKind) (job.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.evs {
		if ev.Job == name && ev.Kind == kind {
			return ev, true
		}
	}
	return job.Event{}, false
}

// TestJobStatusEvents walks one job through the changes of its status on
// an instance — registered, leader, resharded, paused, resumed, disabled,
// enabled, config changed, stopped — and checks each is told once, with
// its details, to every handler given.
func TestJobStatusEvents(t *testing.T) {
	ns := namespace(t)
	var first, second eventLog
	rec := newRecorder()
	cfg := job.Config{Name: "st", Cron: "* * * * * *", ShardingTotalCount: 3}
	in := startInstance(t, ns, "s1", cfg, rec, job.WithEventHandler(first.add), job.WithEventHandler(second.add))
	obs := observer(t, ns)
	has := func(k job.EventKind) func() bool {
		return func() bool { return slices.Contains(first.kinds("st"), k) }
	}
	waitUntil(t, 20*time.Second, has(job.EventResharded))
	for _, k := range []job.EventKind{job.EventRegistered, job.EventLeader} {
		if !slices.Contains(first.kinds("st"), k) {
			t.Errorf("no %s event: %v", k, first.kinds("st"))
		}
	}
	if ev, _ := first.find("st", job.EventResharded); ev.Units != 3 || ev.Detail != "0-2" || ev.Server != "s1" || ev.At.IsZero() {
		t.Errorf("resharded event = %+v, want 3 items 0-2 on s1", ev)
	}

	flag := func(name string) string { return fmt.Sprintf("/st/servers/s1/%s", name) }
	for _, step := range []struct {
		set  bool
		node string
		want job.EventKind
	}{
		{true, "paused", job.EventPaused},
		{false, "paused", job.EventResumed},
		{true, "disabled", job.EventDisabled},
		{false, "disabled", job.EventEnabled},
	} {
		var err error
		if step.set {
			_, err = obs.Create(tctx(t), flag(step.node), nil, regcenter.Persistent)
		} else {
			err = obs.Delete(tctx(t), flag(step.node), -1)
		}
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 10*time.Second, has(step.want))
	}

	changed := cfg
	changed.Cron = "*/2 * * * * *"
	data, err := changed.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Set(tctx(t), "/st/config", data, -1); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, has(job.EventConfigChanged))
	if ev, _ := first.find("st", job.EventConfigChanged); ev.Units != 3 || ev.Detail == "" {
		t.Errorf("config-changed event = %+v", ev)
	}

	in.stop(t)
	if ev, ok := first.find("st", job.EventStopped); !ok || ev.Detail != "shutdown" {
		t.Errorf("stopped event = %+v (found %v), want one saying shutdown", ev, ok)
	}
	for _, k := range []job.EventKind{job.EventPaused, job.EventResumed, job.EventDisabled, job.EventEnabled, job.EventConfigChanged, job.EventStopped} {
		n := 0
		for _, got := range first.kinds("st") {
			if got == k {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s told %d times, want once: %v", k, n, first.kinds("st"))
		}
	}
	if !slices.Equal(first.kinds("st"), second.kinds("st")) {
		t.Errorf("the two handlers were told different things:\n%v\n%v", first.kinds("st"), second.kinds("st"))
	}
}
