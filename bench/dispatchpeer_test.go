package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// Fields from a real /proc/PID/stat, the command name with a space and
	// a parenthesis: utime 150, stime 50, cutime 30, cstime 20, ppid 77.
	stat := "4242 (postgres: x) ) S 77 4242 4242 0 -1 4194560 900 0 0 0 150 50 30 20 20 0 1 0 100 200000 300 18446744073709551615"
	own, reaped, ppid, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if own != 200 || reaped != 50 || ppid != 77 {
		t.Errorf("own %d, reaped %d, ppid %d; want 200, 50, 77", own, reaped, ppid)
	}
	for _, bad := range []string{"no paren", "1 (x) S 2 3"} {
		if _, _, _, err := parseStatCPU(bad); err == nil {
			t.Errorf("parseStatCPU(%q) accepted it", bad)
		}
	}
}

func TestPerK(t *testing.T) {
	if got := perK(2*time.Second, 4000); got != 500 {
		t.Errorf("perK(2s, 4000) = %v ms, want 500", got)
	}
}

func TestDispatchFlags(t *testing.T) {
	c, err := parseFlags([]string{"-dispatch", "-dp-systems", "river,shardjob", "-dp-caps", "capped", "-dp-tasks", "2000", "-dp-duration", "2s", "-dp-nodes", "2"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.dispatch || c.peers || !slices.Equal(c.dp.systems, []string{"river", "shardjob"}) || !slices.Equal(c.dp.capSets, []string{"capped"}) ||
		c.dp.tasks != 2000 || c.dp.duration != 2*time.Second || c.dp.nodes != 2 {
		t.Errorf("parsed %+v", c)
	}
	all, err := parseFlags([]string{"-all"})
	if err != nil {
		t.Fatal(err)
	}
	if !all.dispatch || !slices.Equal(all.dp.systems, dpSystems) || !slices.Equal(all.dp.capSets, []string{"open", "capped"}) {
		t.Errorf("-all: dispatch %t, systems %v, caps %v", all.dispatch, all.dp.systems, all.dp.capSets)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-dispatch", "-dp-systems", "shardjob,asynq"}, `unknown name "asynq"`},
		{[]string{"-dispatch", "-dp-systems", "river,river"}, `"river" named twice`},
		{[]string{"-dispatch", "-dp-caps", "tight"}, `unknown name "tight"`},
		{[]string{"-dispatch", "-dp-tasks", "10"}, "-dp-tasks must be at least 1000"},
		{[]string{"-dispatch", "-dp-nodes", "0"}, "-dp-nodes must be from 1 to 16"},
	} {
		if _, err := parseFlags(bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: err = %v, want %q", bad.args, err, bad.want)
		}
	}
}

// liveCounter is a dpSystem whose database is always empty, counting the
// live queries it is asked.
type liveCounter struct{ calls int }

func (l *liveCounter) insert(context.Context, int, int, string) error { return nil }
func (l *liveCounter) start(context.Context) error                    { return nil }
func (l *liveCounter) close(context.Context) error                    { return nil }
func (l *liveCounter) live(context.Context) (int, error) {
	l.calls++
	return 0, nil
}

// The database is not counted before every task has started: waiting for
// the starts is the process's own business, and a count over a backlog
// every few milliseconds would load the server being measured.
func TestWaitDrainedCountsOnlyAfterEveryStart(t *testing.T) {
	sys := &liveCounter{}
	starts := &dpStarts{}
	starts.n.Store(4)
	err := waitDrained(context.Background(), sys, starts, 5, 30*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "4 of 5 tasks started") {
		t.Errorf("with 4 of 5 started: err = %v, want the starts missing", err)
	}
	if sys.calls != 0 {
		t.Errorf("the database was counted %d times before every task started", sys.calls)
	}
	starts.n.Store(5)
	if err := waitDrained(context.Background(), sys, starts, 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	if sys.calls != 1 {
		t.Errorf("the database was counted %d times once every task started and none was live, want 1", sys.calls)
	}
}
