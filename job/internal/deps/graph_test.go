package deps

import (
	"reflect"
	"testing"
)

func TestParents(t *testing.T) {
	for after, want := range map[string][]string{
		"":          nil,
		"  ":        nil,
		"a":         {"a"},
		" a , b,c ": {"a", "b", "c"},
		"a,,b":      {"a", "", "b"}, // Validate names the empty one
	} {
		if got := Parents(after); !reflect.DeepEqual(got, want) {
			t.Errorf("Parents(%q) = %q, want %q", after, got, want)
		}
	}
}

// TestCheck: the problems come per node in order, the edges refused
// after the parents missing of the same node, then each cycle once, from
// its first job in name order, whatever order the nodes are given in.
func TestCheck(t *testing.T) {
	none := func(int, int) string { return "" }
	if got := Check([]Node{{"a", nil}, {"b", []string{"a"}}, {"c", []string{"a", "b"}}}, none); got != nil {
		t.Fatalf("a valid chain: %v", got)
	}

	nodes := []Node{{"b", []string{"a", "x"}}, {"a", []string{"c"}}, {"c", []string{"b"}}, {"d", []string{"d2"}}, {"d2", nil}}
	refuse := func(dependent, parent int) string {
		if nodes[parent].Name == "d2" {
			return "d2 refused for " + nodes[dependent].Name
		}
		return ""
	}
	want := []Problem{
		{0, `no job "x" here: a parent must be defined with its dependents`},
		{3, "d2 refused for d"},
		{1, "a cycle: a → b → c → a"},
	}
	if got := Check(nodes, refuse); !reflect.DeepEqual(got, want) {
		t.Fatalf("Check:\n got %+v\nwant %+v", got, want)
	}

	// Two cycles through one job, each named once.
	nodes = []Node{{"a", []string{"b", "c"}}, {"b", []string{"a"}}, {"c", []string{"a"}}}
	want = []Problem{{0, "a cycle: a → b → a"}, {0, "a cycle: a → c → a"}}
	if got := Check(nodes, none); !reflect.DeepEqual(got, want) {
		t.Fatalf("two cycles:\n got %+v\nwant %+v", got, want)
	}

	// Of two nodes with one name, the last is the parent.
	nodes = []Node{{"a", nil}, {"b", []string{"a"}}, {"a", []string{"b"}}}
	want = []Problem{{2, "a cycle: a → b → a"}}
	if got := Check(nodes, none); !reflect.DeepEqual(got, want) {
		t.Fatalf("a name twice:\n got %+v\nwant %+v", got, want)
	}
}
