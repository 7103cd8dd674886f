package job

import (
	"testing"

	"github.com/shardjob/shardjob/job/internal/instance"
)

// The changes the instance's node tells are raised as the Events of the
// same name: each kind's string is the EventKind's.
func TestInstanceChangeKindsAreEventKinds(t *testing.T) {
	for kind, want := range map[instance.Kind]EventKind{
		instance.Alarm:        EventAlarm,
		instance.AlarmCleared: EventAlarmCleared,
		instance.Draining:     EventDraining,
		instance.Undrained:    EventUndrained,
		instance.Drained:      EventDrained,
	} {
		if EventKind(kind) != want {
			t.Errorf("instance.%s is %q, the event %q", want, kind, want)
		}
	}
}
