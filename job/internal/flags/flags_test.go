package flags

import (
	"testing"

	"github.com/shardjob/shardjob/internal/layout"
)

func TestSeenIn(t *testing.T) {
	tests := []struct {
		name string
		kids []string
		want Seen
	}{
		{name: "none: no status either"},
		{name: "a live instance", kids: []string{layout.Status, layout.Sharding}, want: Seen{Status: true}},
		{name: "every flag", kids: []string{layout.Trigger, layout.Shutdown, layout.Disabled, layout.Paused, layout.Status},
			want: Seen{Status: true, Paused: true, Disabled: true, Shutdown: true, Trigger: true}},
		{name: "paused, status deleted", kids: []string{layout.Paused}, want: Seen{Paused: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SeenIn(tt.kids); got != tt.want {
				t.Errorf("SeenIn(%v) = %+v, want %+v", tt.kids, got, tt.want)
			}
		})
	}
}

// A flag reports a change only when its value does, so each change gives
// one event.
func TestSettingAFlagReportsAChangeOnce(t *testing.T) {
	f := New(nil, layout.Job("j"), "me", nil, 0)
	steps := []struct {
		paused, disabled bool
		want             bool
	}{
		{false, false, false},
		{true, true, true},
		{true, true, false},
		{false, false, true},
	}
	for i, s := range steps {
		if got := f.SetPaused(s.paused); got != s.want {
			t.Errorf("step %d: SetPaused(%v) changed %v, want %v", i, s.paused, got, s.want)
		}
		if got := f.SetDisabled(s.disabled); got != s.want {
			t.Errorf("step %d: SetDisabled(%v) changed %v, want %v", i, s.disabled, got, s.want)
		}
		if f.Paused() != s.paused {
			t.Errorf("step %d: Paused() = %v", i, f.Paused())
		}
	}
	if f.DisabledItems() != nil {
		t.Errorf("no items read: DisabledItems = %v, want nil", f.DisabledItems())
	}
}
