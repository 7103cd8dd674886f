package main

import (
	"encoding/json"
	"testing"
)

func TestLoadTablePlacedJobs(t *testing.T) {
	// The wire form job/internal/placement writes: counts in the order of
	// servers, trailing zeros left out.
	data := `{"servers":["i0","i1","i2"],"joined":[1,2,3],"seq":3,
		"jobs":{"a":[2,1,1],"b":[1],"c":[0,0,3],"gone":[5]},"unplaced":{"c":1}}`
	var lt loadTable
	if err := json.Unmarshal([]byte(data), &lt); err != nil {
		t.Fatal(err)
	}
	items := map[string]int{"a": 4, "b": 2, "c": 4, "d": 1}
	jobs, units := lt.placedJobs(items)
	// a: 4 of 4; b: 1 of 2; c: 3 placed, 1 unplaced; "gone" is not a job.
	if jobs != 1 || units != 4+1+3+5 {
		t.Fatalf("placed jobs %d, units %d; want 1 and 13", jobs, units)
	}
	if n := lt.placedOn("i2"); n != 4 {
		t.Errorf("units on i2 %d, want 4", n)
	}
	if n := lt.placedOn("i9"); n != 0 {
		t.Errorf("units on a server not listed %d", n)
	}
}
