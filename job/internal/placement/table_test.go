package placement

import (
	"errors"
	"maps"
	"testing"
)

// The table's sums are over its entries, and its join numbers follow the
// servers that start and stop holding units.
func TestTableEntries(t *testing.T) {
	tb := newTable()
	tb.set("a", unitsOf(map[string][]int{"s2": {0}, "s1": {1, 2}, "s3": nil}, nil))
	tb.set("b", unitsOf(map[string][]int{"s2": {0}}, []int{1}))
	if got, want := tb.Units(), map[string]int{"s1": 2, "s2": 2}; !maps.Equal(got, want) {
		t.Fatalf("units %v, want %v", got, want)
	}
	if tb.total() != 5 || tb.Unplaced() != 1 {
		t.Fatalf("total %d, unplaced %d; want 5, 1", tb.total(), tb.Unplaced())
	}
	if got, want := tb.joined, map[string]int{"s1": 1, "s2": 2}; !maps.Equal(got, want) {
		t.Fatalf("joined %v, want %v", got, want)
	}
	if got, want := tb.unitsWithout("a"), map[string]int{"s2": 1}; !maps.Equal(got, want) {
		t.Fatalf("units without a %v, want %v", got, want)
	}
	before := tb.clone()
	tb.set("a", jobUnits{})
	tb.set("c", unitsOf(map[string][]int{"s1": {0}}, nil))
	if got, want := tb.joined, map[string]int{"s1": 3, "s2": 2}; !maps.Equal(got, want) || tb.seq != 3 {
		t.Fatalf("joined %v seq %d, want %v seq 3", got, tb.seq, want)
	}
	if _, ok := before.jobs["c"]; ok || before.jobs["a"].total() != 3 {
		t.Fatal("a clone changed with the table")
	}
	again, err := DecodeTable(tb.encode())
	if err != nil {
		t.Fatal(err)
	}
	for j, u := range tb.jobs {
		if !again.jobs[j].equal(u) {
			t.Errorf("job %s: %+v after its encoding, want %+v", j, again.jobs[j], u)
		}
	}
	if !maps.Equal(again.joined, tb.joined) || again.seq != tb.seq || len(again.jobs) != len(tb.jobs) {
		t.Errorf("decoded %+v, want %+v", again, tb)
	}
}

func TestDecodeTableRefuses(t *testing.T) {
	for _, data := range []string{
		``,
		`{"servers":["a"],"joined":[1,2],"seq":2,"jobs":{}}`,
		`{"servers":["a b"],"joined":[1],"seq":1,"jobs":{"j":[1]}}`,
		`{"servers":["a","a"],"joined":[1,2],"seq":2,"jobs":{"j":[1,1]}}`,
		`{"servers":["a"],"joined":[2],"seq":1,"jobs":{"j":[1]}}`,
		`{"servers":["a"],"joined":[1],"seq":1,"jobs":{"j":[1,1]}}`,
		`{"servers":["a"],"joined":[1],"seq":1,"jobs":{"j":[10001]}}`,
		`{"servers":["a"],"joined":[1],"seq":1,"jobs":{"j":[1]},"unplaced":{"j":-1}}`,
		`{"servers":["a","b"],"joined":[1,2],"seq":2,"jobs":{"j":[1]}}`,
		`{"servers":[],"joined":[],"seq":0,"jobs":{},"units":{}}`,
	} {
		if _, err := DecodeTable([]byte(data)); !errors.Is(err, ErrTableGarbage) {
			t.Errorf("%s: %v, want ErrTableGarbage", data, err)
		}
	}
}
