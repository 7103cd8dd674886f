package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestErrorsSayEachFailureOnce: jobs that failed to stop alike are one
// line of the message (ten thousand of them were ten thousand lines), the
// jobs named up to a bound; each job's error is still there for errors.Is.
func TestErrorsSayEachFailureOnce(t *testing.T) {
	var e Errors
	if e.Err() != nil {
		t.Fatal("no failure is an error")
	}
	for i := range 8 {
		e.Add(fmt.Sprintf("r%02d", 7-i), fmt.Errorf("leave: %w", context.DeadlineExceeded))
	}
	e.Add("odd", errors.New("resigning leadership: refused"))
	got := e.Err().Error()
	want := `8 jobs ("r00", "r01", "r02", "r03", "r04", and 3 more): leave: context deadline exceeded` + "\n" +
		`job "odd": resigning leadership: refused`
	if got != want {
		t.Fatalf("message:\n%s\nwant:\n%s", got, want)
	}
	if !errors.Is(e.Err(), context.DeadlineExceeded) {
		t.Fatal("a job's error is not found by errors.Is")
	}
	if got := Jobs(errors.Join(e.Err(), errors.New("the scheduler's background work"))); len(got) != 9 || got[8] != "odd" {
		t.Fatalf("Jobs: %v", got)
	}
	if n := len(e.Unwrap()); n != 9 || !strings.HasPrefix(e.Unwrap()[8].Error(), `job "odd": `) {
		t.Fatalf("unwrapped: %d errors, the last %v", n, e.Unwrap()[8])
	}
}

// TestErrorsTable: the message for some shapes of failure.
func TestErrorsTable(t *testing.T) {
	tests := []struct {
		name string
		jobs []string
		errs []string
		want string
	}{
		{"one", []string{"a"}, []string{"x"}, `job "a": x`},
		{"two alike", []string{"b", "a"}, []string{"x", "x"}, `2 jobs ("a", "b"): x`},
		{"two unlike", []string{"a", "b"}, []string{"x", "y"}, "job \"a\": x\njob \"b\": y"},
		{"most first", []string{"a", "b", "c"}, []string{"y", "x", "x"}, "2 jobs (\"b\", \"c\"): x\njob \"a\": y"},
		{"five named", []string{"e", "d", "c", "b", "a"}, []string{"x", "x", "x", "x", "x"}, `5 jobs ("a", "b", "c", "d", "e"): x`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e Errors
			for i, j := range tt.jobs {
				e.Add(j, errors.New(tt.errs[i]))
			}
			if got := e.Err().Error(); got != tt.want {
				t.Fatalf("message:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestStopAll: every runner is stopped, the failures gathered by name.
func TestStopAll(t *testing.T) {
	fail := errors.New("stuck")
	err := StopAll(context.Background(), []string{"a", "b", "c"}, func(s string) string { return s },
		func(_ context.Context, s string) error {
			if s == "b" {
				return fail
			}
			return nil
		})
	if !errors.Is(err, fail) || fmt.Sprint(Jobs(err)) != "[b]" {
		t.Fatalf("StopAll: %v, jobs %v", err, Jobs(err))
	}
	if err := StopAll(context.Background(), []string{"a"}, func(s string) string { return s },
		func(context.Context, string) error { return nil }); err != nil {
		t.Fatalf("StopAll with no failure: %v", err)
	}
}
