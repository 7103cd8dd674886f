package instance

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/process"
)

// The node's state machine, step by step: the alarm raised and cleared
// once per crossing, the drain state entered, left, and drained once the
// instance holds nothing and runs nothing — with the changes in the order
// they are told.
func TestNodeStep(t *testing.T) {
	type read struct {
		units, threshold int
		draining         bool
		running          int
	}
	steps := []struct {
		what string
		read read
		want []Change
		st   Status
	}{
		{"idle", read{0, 2, false, 0}, nil, Status{}},
		{"over the threshold", read{3, 2, false, 1}, []Change{{Alarm, 3, 2}}, Status{Units: 3, Alarmed: true}},
		{"still over", read{4, 2, false, 1}, nil, Status{Units: 4, Alarmed: true}},
		{"drained of units while running, back under", read{0, 2, true, 1},
			[]Change{{AlarmCleared, 0, 2}, {Draining, 0, 0}}, Status{Draining: true}},
		{"the runs ended", read{0, 2, true, 0}, []Change{{Drained, 0, 0}}, Status{Draining: true, Drained: true}},
		{"drained once", read{0, 2, true, 0}, nil, Status{Draining: true, Drained: true}},
		{"taken off the list", read{1, 2, false, 0}, []Change{{Undrained, 1, 0}}, Status{Units: 1}},
		{"on the list holding units", read{1, 2, true, 0}, []Change{{Draining, 1, 0}}, Status{Units: 1, Draining: true}},
		{"threshold off while alarmed never raises", read{5, 0, true, 0}, nil, Status{Units: 5, Draining: true}},
	}
	n := New(Config{})
	for i, st := range steps {
		n.mu.Lock()
		got := n.step(st.read.units, st.read.threshold, st.read.draining, st.read.running)
		n.mu.Unlock()
		if !slices.Equal(got, st.want) {
			t.Errorf("step %d (%s): changes %v, want %v", i, st.what, got, st.want)
		}
		if s := n.Status(); s != st.st {
			t.Errorf("step %d (%s): status %+v, want %+v", i, st.what, s, st.st)
		}
	}
}

func TestAlarmStep(t *testing.T) {
	for _, c := range []struct {
		alarmed          bool
		units, threshold int
		want             bool
		kind             Kind
	}{
		{false, 3, 0, false, ""},
		{false, 3, 3, false, ""},
		{false, 4, 3, true, Alarm},
		{true, 4, 3, true, ""},
		{true, 3, 3, false, AlarmCleared},
		{true, 9, 0, false, AlarmCleared},
	} {
		got, kind := AlarmStep(c.alarmed, c.units, c.threshold)
		if got != c.want || kind != c.kind {
			t.Errorf("AlarmStep(%v, %d, %d) = %v, %q; want %v, %q", c.alarmed, c.units, c.threshold, got, kind, c.want, c.kind)
		}
	}
}

var errSentinel = errors.New("sentinel")

func TestSkew(t *testing.T) {
	for _, c := range []struct {
		offset, max time.Duration
		bad         bool
	}{
		{0, time.Second, false},
		{time.Second, time.Second, false},
		{time.Second + time.Millisecond, time.Second, false}, // the mtime's resolution
		{time.Second + 2*time.Millisecond, time.Second, true},
		{-time.Second - 2*time.Millisecond, time.Second, true},
		{-500 * time.Millisecond, time.Second, false},
	} {
		err := skew(errSentinel, c.offset, c.max)
		if (err != nil) != c.bad || (err != nil && !errors.Is(err, errSentinel)) {
			t.Errorf("skew(%v, %v) = %v; want an error %v, wrapping the sentinel", c.offset, c.max, err, c.bad)
		}
	}
}

func TestClockErrorBeforeAMeasure(t *testing.T) {
	n := New(Config{ClockSkew: errSentinel})
	n.clockOffset.Store(int64(time.Hour))
	if err := n.ClockError(time.Second); err != nil {
		t.Errorf("not measured yet: %v", err)
	}
	n.clockMeasured.Store(true)
	if err := n.ClockError(0); err != nil {
		t.Errorf("max 0 is off: %v", err)
	}
	if err := n.ClockError(time.Second); !errors.Is(err, errSentinel) {
		t.Errorf("an hour off: %v, want the sentinel", err)
	}
}

func TestInUseSaysWhoAndWraps(t *testing.T) {
	h := process.Holder{Host: "h1", PID: 42}
	err := InUse(errSentinel, "s1", h, 0xabc, 4*time.Second)
	if !errors.Is(err, errSentinel) {
		t.Fatalf("%v does not wrap the sentinel", err)
	}
	for _, want := range []string{`"s1"`, h.String(), "0xabc", "4s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
