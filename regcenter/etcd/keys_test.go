package etcd

import (
	"fmt"
	"strings"
	"testing"
)

// TestKeyLayout pins the node keys and children prefixes to the layout
// etcd.go describes, at every depth the layout encodes.
func TestKeyLayout(t *testing.T) {
	e := &Center{pfx: "/shop/"}
	if got := e.nodeKey("/"); got != "/shop/n/000/" {
		t.Fatalf("nodeKey(/) = %q", got)
	}
	if got := e.childPrefix("/"); got != "/shop/n/001/" {
		t.Fatalf("childPrefix(/) = %q", got)
	}
	for _, d := range []int{1, 2, 9, 10, 99, 100, 998, 999} {
		p := strings.Repeat("/a", d)
		if got, want := e.nodeKey(p), fmt.Sprintf("/shop/n/%03d%s", d, p); got != want {
			t.Errorf("nodeKey at depth %d = %q, want %q", d, got, want)
		}
		if got, want := e.childPrefix(p), fmt.Sprintf("/shop/n/%03d%s/", d+1, p); got != want {
			t.Errorf("childPrefix at depth %d = %q, want %q", d, got, want)
		}
	}
}
