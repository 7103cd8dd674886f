package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The walk-through runs as the package doc says: the viewer refused, the
// operator's trigger done, both in the trail the admin reads.
func TestWalkThrough(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out, "127.0.0.1:0", true); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"POST /jobs/report/trigger -> 403", "needs the operator role",
		"POST /jobs/report/trigger -> 200",
		"GET /audit -> 200", `"who": "oncall"`, `"result": "ok"`, `"who": "dashboard"`, `"result": "refused"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the walk-through lacks %q:\n%s", want, got)
		}
	}
}
