package runs

import (
	"encoding/json"
	"math"
	"sync"
	"testing"
)

// TestOutputSlot: an open slot keeps the last output set; Take closes it,
// returns what was set, and refuses later sets without changing it. A
// slot never set takes nil.
func TestOutputSlot(t *testing.T) {
	var o Output
	if !o.Set(json.RawMessage(`1`)) || !o.Set(json.RawMessage(`2`)) {
		t.Fatal("an open slot refused a set")
	}
	if got := string(o.Take()); got != "2" {
		t.Fatalf("took %q, want the last set, 2", got)
	}
	if o.Set(json.RawMessage(`3`)) {
		t.Fatal("a taken slot took a set")
	}
	if got := string(o.Take()); got != "2" {
		t.Fatalf("a refused set changed the output to %q", got)
	}
	var empty Output
	if got := empty.Take(); got != nil {
		t.Fatalf("a slot never set took %q", got)
	}
}

// TestOutputSetsRace: sets from many goroutines and a take do not race
// (run with -race), and the output taken is one of those set.
func TestOutputSetsRace(t *testing.T) {
	var o Output
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.Set(json.RawMessage{'0' + byte(i)})
		}()
	}
	wg.Wait()
	if got := o.Take(); len(got) != 1 || got[0] < '0' || got[0] > '7' {
		t.Fatalf("took %q", got)
	}
}

// TestEncodeOutput: HTML characters kept as they are, no newline after,
// raw JSON compacted, bytes as base64, and encoding/json's error for a
// value it cannot encode.
func TestEncodeOutput(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{map[string]string{"a": "<b>&"}, `{"a":"<b>&"}`},
		{json.RawMessage("{ \"x\" :\n 1 }"), `{"x":1}`},
		{[]byte("hi"), `"aGk="`},
		{nil, `null`},
	} {
		got, err := EncodeOutput(c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("EncodeOutput(%#v) = %q, %v; want %q", c.v, got, err, c.want)
		}
	}
	if _, err := EncodeOutput(math.Inf(1)); err == nil {
		t.Error("encoded +Inf")
	}
	if _, err := EncodeOutput(make(chan int)); err == nil {
		t.Error("encoded a channel")
	}
}
