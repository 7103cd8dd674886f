package benchkit

import (
	"os"
	"slices"
	"testing"
	"time"
)

func TestParseLists(t *testing.T) {
	ns, err := ParseInts(" 1, 10,100")
	if err != nil || !slices.Equal(ns, []int{1, 10, 100}) {
		t.Errorf("ParseInts = %v, %v", ns, err)
	}
	if got := JoinInts(ns, "/"); got != "1/10/100" {
		t.Errorf("JoinInts = %q", got)
	}
	for _, bad := range []string{"", "0", "1,x", "-3"} {
		if _, err := ParseInts(bad); err == nil {
			t.Errorf("ParseInts(%q) accepted", bad)
		}
	}
	ds, err := ParseDurations("4s, 10s")
	if err != nil || !slices.Equal(ds, []time.Duration{4 * time.Second, 10 * time.Second}) {
		t.Errorf("ParseDurations = %v, %v", ds, err)
	}
	for _, bad := range []string{"", "0s", "4", "-1s"} {
		if _, err := ParseDurations(bad); err == nil {
			t.Errorf("ParseDurations(%q) accepted", bad)
		}
	}
}

func TestWorkDir(t *testing.T) {
	dir, done, err := WorkDir("benchkit-test", false)
	if err != nil {
		t.Fatal(err)
	}
	if !dirExists(dir) {
		t.Fatalf("%s was not made", dir)
	}
	done()
	if dirExists(dir) {
		t.Errorf("%s was not removed", dir)
	}
}

func dirExists(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}
