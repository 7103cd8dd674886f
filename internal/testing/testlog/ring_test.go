package testlog

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRingKeepsTheLatestRecordsInOrder: a ring of n keeps the latest n
// records, and its dump writes them oldest first, with the attributes of
// the logger that made each.
func TestRingKeepsTheLatestRecordsInOrder(t *testing.T) {
	for _, added := range []int{3, 5, 12} {
		r := newRing(5)
		log := slog.New(&ringHandler{ring: r, warn: slog.DiscardHandler}).With("instance", "s1")
		for i := range added {
			log.Debug("record", "i", i)
		}
		name := filepath.Join(t.TempDir(), "dump.log")
		if err := r.dump(name); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		want := min(added, 5)
		if len(lines) != want {
			t.Fatalf("%d added: %d lines dumped, want %d:\n%s", added, len(lines), want, data)
		}
		for k, l := range lines {
			i := added - want + k
			if !strings.Contains(l, "level=DEBUG msg=record i="+strconv.Itoa(i)+" instance=s1") {
				t.Errorf("%d added: line %d is %q, want record %d", added, k, l, i)
			}
		}
	}
}

// TestRingPassesWarningsOn: the ring's handler passes warnings and errors
// to the test's log handler, and keeps every level itself.
func TestRingPassesWarningsOn(t *testing.T) {
	var b Buffer
	r := newRing(8)
	log := slog.New(&ringHandler{ring: r, warn: slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelWarn})})
	log.Debug("quiet")
	log.Warn("loud")
	if got := b.String(); !strings.Contains(got, "msg=loud") || strings.Contains(got, "quiet") {
		t.Errorf("passed on: %q, want the warning only", got)
	}
	kept := 0
	for _, rec := range r.recs {
		if !rec.Time.IsZero() {
			kept++
		}
	}
	if kept != 2 {
		t.Errorf("%d records kept, want 2", kept)
	}
}
