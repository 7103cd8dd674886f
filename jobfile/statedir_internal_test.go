package jobfile

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A killed process with a default server id (host@-@pid) leaves its script
// state directory under an id no later process has: the directories of
// this host's dead processes are the ones reaped beside this one's, never
// a live process's, another host's or a named server's.
func TestDeadSiblingsAreThisHostsDeadDefaultIDs(t *testing.T) {
	parent := t.TempDir()
	for _, d := range []string{"10.0.0.5@-@100", "10.0.0.5@-@200", "10.0.0.5@-@300", "10.0.0.6@-@400", "orders-1", "10.0.0.5@-@x"} {
		if err := os.Mkdir(filepath.Join(parent, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(parent, "10.0.0.5@-@500"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	alive := func(pid int) bool { return pid == 200 }
	got := deadSiblings(parent, "10.0.0.5@-@300", alive)
	if want := []string{"10.0.0.5@-@100"}; !slices.Equal(got, want) {
		t.Errorf("dead siblings %v, want %v", got, want)
	}
	if got := deadSiblings(parent, "orders-1", alive); got != nil {
		t.Errorf("a named server id reaps %v: its state directory is its own", got)
	}
	if !processAlive(os.Getpid()) {
		t.Error("this process reads as dead")
	}
}
