package instance

import (
	"slices"
	"testing"

	"github.com/shardjob/shardjob/sharding"
)

// The demonstration of seed 000 §5: instances A, B and C with alarm
// thresholds 10, 8 and 4 and fault tolerance 1, walked state by state. At
// every state the caps are the seed's N, and an instance is alarmed exactly
// when it holds more than its threshold — which covers every point the
// seed marks "触发预警" (alarm raised). An alarm is raised once per
// crossing and cleared once.
func TestAlarmsWalkSeedDemonstration(t *testing.T) {
	thresholds := map[string]int{"A": 10, "B": 8, "C": 4}
	type inst struct {
		name  string
		units int
	}
	steps := []struct {
		what  string
		units int // K
		held  []inst
		caps  int      // the seed's N, the same for every instance
		marks []string // instances the seed marks alarmed here
		raise []string // alarm events raised at this step
		clear []string // cleared at this step
	}{
		{"5.1 start", 9, []inst{{"A", 9}}, 10, nil, nil, nil},
		{"a job added", 10, []inst{{"A", 10}}, 11, nil, nil, nil},
		{"a job added", 11, []inst{{"A", 11}}, 12, []string{"A"}, []string{"A"}, nil},
		{"B joins", 11, []inst{{"A", 11}, {"B", 0}}, 12, nil, nil, nil},
		{"a job added", 12, []inst{{"A", 11}, {"B", 1}}, 13, nil, nil, nil},
		{"a job added", 13, []inst{{"A", 12}, {"B", 1}}, 14, []string{"A"}, nil, nil},
		{"manual rebalance", 13, []inst{{"A", 7}, {"B", 6}}, 14, nil, nil, []string{"A"}},
		{"5.2 jobs added", 18, []inst{{"A", 10}, {"B", 8}}, 19, nil, nil, nil},
		{"case 1: B down", 18, []inst{{"A", 18}}, 19, []string{"A"}, []string{"A"}, nil},
		{"5.2 again", 18, []inst{{"A", 10}, {"B", 8}}, 19, nil, nil, []string{"A"}},
		{"case 3: a job added", 19, []inst{{"A", 10}, {"B", 9}}, 20, []string{"B"}, []string{"B"}, nil},
		{"5.3 C joins", 19, []inst{{"A", 10}, {"B", 9}, {"C", 0}}, 10, nil, nil, nil},
		{"manual rebalance", 19, []inst{{"A", 9}, {"B", 7}, {"C", 3}}, 10, nil, nil, []string{"B"}},
		{"case 4: B down", 19, []inst{{"A", 13}, {"C", 6}}, 20, []string{"A", "C"}, []string{"A", "C"}, nil},
		{"back to 5.3", 19, []inst{{"A", 9}, {"B", 7}, {"C", 3}}, 10, nil, nil, []string{"A", "C"}},
		{"case 5: B down, release seen first", 19, []inst{{"A", 10}, {"B", 0}, {"C", 9}}, 10, []string{"C"}, []string{"C"}, nil},
	}
	alarmed := map[string]bool{}
	for i, st := range steps {
		tolerance := map[string]int{}
		for _, in := range st.held {
			tolerance[in.name] = 1
		}
		caps := sharding.Caps(st.units, tolerance)
		var raised, cleared []string
		for _, in := range st.held {
			if caps[in.name] != st.caps {
				t.Errorf("step %d (%s): %s has cap %d, the seed says N=%d", i, st.what, in.name, caps[in.name], st.caps)
			}
			if in.units > caps[in.name] {
				t.Errorf("step %d (%s): %s holds %d over its cap %d", i, st.what, in.name, in.units, caps[in.name])
			}
			var ev Kind
			alarmed[in.name], ev = AlarmStep(alarmed[in.name], in.units, thresholds[in.name])
			switch ev {
			case Alarm:
				raised = append(raised, in.name)
			case AlarmCleared:
				cleared = append(cleared, in.name)
			}
		}
		for _, name := range st.marks {
			if !alarmed[name] {
				t.Errorf("step %d (%s): the seed marks %s alarmed; it is not", i, st.what, name)
			}
		}
		if !slices.Equal(raised, st.raise) || !slices.Equal(cleared, st.clear) {
			t.Errorf("step %d (%s): raised %v cleared %v, want raised %v cleared %v", i, st.what, raised, cleared, st.raise, st.clear)
		}
	}
	// §5.4: with K=21 and three instances the cap is 11: A, holding 11,
	// takes no more.
	if c := sharding.Caps(21, map[string]int{"A": 1, "B": 1, "C": 1}); c["A"] != 11 {
		t.Errorf("K=21, S=3: cap %d, the seed says 11", c["A"])
	}
}
