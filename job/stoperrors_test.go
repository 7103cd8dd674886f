package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestShutdownErrorsSayEachFailureOnce: jobs that failed to stop alike are
// one line of Shutdown's message (ten thousand of them were ten thousand
// lines), the jobs named up to a bound; each job's error is still there
// for errors.Is.
func TestShutdownErrorsSayEachFailureOnce(t *testing.T) {
	var e jobErrors
	if e.err() != nil {
		t.Fatal("no failure is an error")
	}
	for i := range 8 {
		e.add(fmt.Sprintf("r%02d", 7-i), fmt.Errorf("leave: %w", context.DeadlineExceeded))
	}
	e.add("odd", errors.New("resigning leadership: refused"))
	got := e.err().Error()
	want := `8 jobs ("r00", "r01", "r02", "r03", "r04", and 3 more): leave: context deadline exceeded` + "\n" +
		`job "odd": resigning leadership: refused`
	if got != want {
		t.Fatalf("message:\n%s\nwant:\n%s", got, want)
	}
	if !errors.Is(e.err(), context.DeadlineExceeded) {
		t.Fatal("a job's error is not found by errors.Is")
	}
	if got := JobsNotStopped(errors.Join(e.err(), errors.New("the scheduler's background work"))); len(got) != 9 || got[8] != "odd" {
		t.Fatalf("JobsNotStopped: %v", got)
	}
	if n := len(e.Unwrap()); n != 9 || !strings.HasPrefix(e.Unwrap()[8].Error(), `job "odd": `) {
		t.Fatalf("unwrapped: %d errors, the last %v", n, e.Unwrap()[8])
	}
}
