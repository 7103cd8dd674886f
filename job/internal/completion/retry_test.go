package completion

import (
	"errors"
	"testing"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// TestCorrectByTarget: a failed operation is corrected by what it stands
// for; a failure no retry fixes is refused.
func TestCorrectByTarget(t *testing.T) {
	noNode := regcenter.ErrNoNode
	exists := regcenter.ErrNodeExists
	moved := regcenter.ErrBadVersion
	cases := []struct {
		name      string
		t         target
		err       error
		unfenced  bool
		want      bool
		corrected func(s *Completer, c *completion) bool
	}{
		{"running mark gone", target{1, layout.Running}, noNode, false, true,
			func(_ *Completer, c *completion) bool { return c.skipRunning[1] }},
		{"claim gone", target{1, layout.Failover}, noNode, false, true,
			func(_ *Completer, c *completion) bool { return c.skipClaim[1] }},
		{"completed gone", target{1, layout.Completed}, noNode, false, true,
			func(s *Completer, _ *completion) bool { return !s.Records.Exists(1) }},
		{"completed written elsewhere", target{1, layout.Completed}, exists, false, true,
			func(_ *Completer, c *completion) bool { return c.reread[1] }},
		{"completed moved elsewhere", target{1, layout.Completed}, moved, false, true,
			func(_ *Completer, c *completion) bool { return c.reread[1] }},
		{"completed exists, unfenced", target{1, layout.Completed}, exists, true, true,
			func(s *Completer, _ *completion) bool { return s.Records.Exists(1) }},
		{"completed moved, unfenced", target{1, layout.Completed}, moved, true, true,
			func(_ *Completer, c *completion) bool { return c.skipCompleted[1] }},
		{"misfire node gone", target{1, layout.Misfire}, noNode, false, true,
			func(s *Completer, _ *completion) bool { return !s.Owed.HasNode(1) }},
		{"queue entry gone", target{1, queueEntry}, noNode, false, true,
			func(_ *Completer, c *completion) bool { return c.skipDequeue[1] }},
		{"queue entry already there", target{1, queueEntry}, exists, false, true,
			func(_ *Completer, c *completion) bool { return c.skipDequeue[1] }},
		{"queue entry, other failure", target{1, queueEntry}, regcenter.ErrNotEmpty, false, false, nil},
		{"running mark exists", target{1, layout.Running}, exists, false, false, nil},
		{"other failure", target{1, layout.Completed}, errors.New("boom"), false, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testCompleter()
			s.Owed.SetNode(1, true)
			// Item 1's completed node known as the opposite of what a
			// correction of it notes, so that the correction shows.
			s.Records.Seen(1, errors.Is(tc.err, noNode))
			c := completion{}
			if tc.unfenced {
				c.completedVersion = map[int]int32{1: 3}
			}
			if got := s.correct(&c, tc.t, tc.err); got != tc.want {
				t.Fatalf("correct = %v, want %v", got, tc.want)
			}
			if tc.corrected != nil && !tc.corrected(s, &c) {
				t.Errorf("not corrected: %+v", c)
			}
		})
	}
}
