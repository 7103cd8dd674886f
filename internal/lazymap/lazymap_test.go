package lazymap_test

import (
	"fmt"
	"testing"

	"github.com/shardjob/shardjob/internal/lazymap"
)

func TestSetMakesTheMapOnce(t *testing.T) {
	var m map[int]string
	if len(m) != 0 {
		t.Fatal("a nil map has keys")
	}
	lazymap.Set(&m, 1, "a")
	first := fmt.Sprintf("%p", m)
	lazymap.Set(&m, 2, "b")
	if len(m) != 2 || m[1] != "a" || m[2] != "b" || fmt.Sprintf("%p", m) != first {
		t.Fatalf("after two sets: %v", m)
	}
}

func ExampleSet() {
	type seen map[string]bool
	var s seen // no map yet
	lazymap.Set(&s, "x", true)
	fmt.Println(len(s), s["x"])
	// Output: 1 true
}
