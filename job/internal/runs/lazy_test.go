package runs

import (
	"sync"
	"testing"
)

func TestLazyMakesOnceAndReportsWhetherMade(t *testing.T) {
	var l Lazy[int]
	if l.IfMade() != nil {
		t.Fatal("an empty Lazy says it holds a value")
	}
	var made int
	var wg sync.WaitGroup
	got := make([]*int, 8)
	for i := range got {
		wg.Go(func() {
			got[i] = l.Get(func() *int { made++; v := 7; return &v })
		})
	}
	wg.Wait()
	if made != 1 {
		t.Fatalf("made %d times, want once", made)
	}
	for _, p := range got {
		if p != got[0] || *p != 7 {
			t.Fatalf("Get returned %v and %v: not the one value", p, got[0])
		}
	}
	if l.IfMade() != got[0] {
		t.Fatal("IfMade does not return the value made")
	}
}
