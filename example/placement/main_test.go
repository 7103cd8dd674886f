package main

import (
	"strings"
	"testing"

	"github.com/shardjob/shardjob/job"
)

// An event is printed on the row that shows what it did, the first whose
// runs differ from the row before it, not on a line of its own ahead of
// rows that do not show it yet.
func TestARowCarriesTheEventThatChangedIt(t *testing.T) {
	tl := &tally{byFire: map[int64]map[string]string{
		1: {"a": "instance-1", "b": "instance-2"},
		2: {"a": "instance-1", "b": "instance-2"},
		3: {"a": "instance-1", "b": "instance-1"},
	}}
	if row := tl.lineAt(1); strings.Contains(row, "<-") {
		t.Errorf("row 1 carries an event before any: %q", row)
	}
	tl.event(job.Event{Kind: job.EventDrained, Server: "instance-2"})
	if row := tl.lineAt(2); strings.Contains(row, "drained") {
		t.Errorf("row 2 shows no change yet but carries the event: %q", row)
	}
	row := tl.lineAt(3)
	if !strings.Contains(row, "instance-1:  2") || !strings.Contains(row, "<- instance-2 drained") {
		t.Errorf("row 3, where instance-2's unit moved, = %q: want it to carry instance-2's drained event", row)
	}
	if left := tl.flush(); len(left) != 0 {
		t.Errorf("events left after the row that showed them: %q", left)
	}
	if row := tl.lineAt(4); !strings.Contains(row, "(no run)") {
		t.Errorf("a second with no run = %q", row)
	}
}
