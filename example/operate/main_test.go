package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The walk-through shows what its doc says: a retry's attempts with their
// waits, the late alert the receiver got, a backfill through, the
// viewer refused, and the audit trail holding both operations.
func TestWalkThrough(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"attempt 1: failed", "attempt 2 (after a wait of 200ms): failed", "attempt 3 (after a wait of 400ms): ok",
		`the receiver got POST /alerts {"text":"shardjob: job report: fire`, "is late",
		"POST /jobs/import/backfill", "-> 200",
		"POST /jobs/import/trigger -> 403", "needs the operator role",
		"dashboard trigger import via http: refused", "oncall backfill import via http: ok",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the walk-through lacks %q:\n%s", want, got)
		}
	}
	if m := regexp.MustCompile(`through: (\d+) of (\d+) runs done`).FindStringSubmatch(got); m == nil || m[1] != m[2] || m[1] == "0" {
		t.Errorf("the backfill did not end through with every run done:\n%s", got)
	}
}
