package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
)

// outputs are the outputs of writeHistory's executions, by item.
var outputs = map[int]json.RawMessage{
	11: json.RawMessage(`{"rows": 11, "note": "<ok>"}`),
	10: json.RawMessage(`"` + strings.Repeat("0123456789", 10) + `"`),
	0:  json.RawMessage(`"half\n\u001b[31mred\u202eevil"`),
}

// writeHistory records 12 executions (jobs a and b alternating, servers
// s1 and s2 alternating, every fourth failed, the newest fire a minute
// ago, three with an output) and 3 events, and closes the recorder.
func writeHistory(t *testing.T, cfg history.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg.Logger = testLogger(t)
	rec, err := history.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	newest := time.Now().Add(-time.Minute).Truncate(time.Second)
	for i := range 12 {
		fire := newest.Add(time.Duration(i-11) * 10 * time.Minute)
		var err error
		if i%4 == 0 {
			err = fmt.Errorf("item %d: upstream said\nno", i)
		}
		rec.AfterExecution(listener.Execution{Job: []string{"a", "b"}[i%2], TaskID: fmt.Sprint("t", i), ServerID: []string{"s1", "s2"}[i%2],
			Item: i, Kind: "fire", FireTime: fire, Begin: fire, End: fire.Add(42 * time.Millisecond), Err: err, Output: outputs[i]})
	}
	for _, k := range []job.EventKind{job.EventRegistered, job.EventLeader, job.EventPaused} {
		rec.HandleEvent(job.Event{Kind: k, Job: "a", Server: "s1", Detail: "d-" + string(k)})
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryCommand reads a history database with "shardjob history":
// tables, JSON, filters, paging, events, the environment, and its errors.
// No ZooKeeper is given: the command needs none.
func TestHistoryCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	writeHistory(t, history.Config{DSN: path})

	code, out, errOut := runCLI("history", "--history-dsn", path)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 13 || !regexp.MustCompile(`^ID\s+START\s+JOB\s+ITEM\s+KIND\s+SERVER\s+DURATION\s+RESULT\s+ERROR\s+OUTPUT$`).MatchString(lines[0]) {
		t.Fatalf("table:\n%s", out)
	}
	if !regexp.MustCompile(`^12\s+\S+ \S+\s+b\s+11\s+fire\s+s2\s+42ms\s+success\s+-\s+\{"rows":11,"note":"<ok>"\}$`).MatchString(lines[1]) {
		t.Errorf("newest row: %q", lines[1])
	}
	if want := strings.Repeat("0123456789", 6) + "…"; !strings.HasSuffix(lines[2], " "+want) {
		t.Errorf("a long output is not cut at 60 characters: %q", lines[2])
	}
	if !regexp.MustCompile(`^1\s+.*\ba\s+0\s+fire\s+s1\s+42ms\s+failure\s+item 0: upstream said no\s+half \[31mred evil$`).MatchString(lines[12]) {
		t.Errorf("oldest row: %q", lines[12])
	}
	if strings.ContainsAny(out, "\x1b\u202e") {
		t.Error("an output's escape or direction override reached the terminal")
	}
	code, out, _ = runCLI("history", "a", "--history-dsn", path, "--output-width", "0", "--limit", "1", "--before", "12")
	if code != exitOK || !strings.Contains(out, " "+strings.Repeat("0123456789", 10)+"\n") {
		t.Errorf("--output-width 0: exit %d\n%s", code, out)
	}

	// A job, failed only, as JSON (two spellings).
	for _, flags := range [][]string{{"--json"}, {"-o", "json"}} {
		code, out, _ = runCLI(append([]string{"history", "a", "--failed", "--history-dsn", path}, flags...)...)
		var p history.Page
		if err := json.Unmarshal([]byte(out), &p); code != exitOK || err != nil {
			t.Fatalf("%v: exit %d, %v: %s", flags, code, err, out)
		}
		if len(p.Executions) != 3 || p.Next != "" {
			t.Errorf("%v: %+v", flags, p)
		}
		for _, e := range p.Executions {
			if e.Job != "a" || e.Result != history.ResultFailure {
				t.Errorf("%v: %+v", flags, e)
			}
		}
		for _, key := range []string{`"taskId"`, `"fireTime"`, `"durationMs": 42`, `"result": "failure"`} {
			if !strings.Contains(out, key) {
				t.Errorf("%v: JSON lacks %s: %s", flags, key, out)
			}
		}
	}

	// The environment names the database; --server, --since, paging.
	t.Setenv("SHARDJOB_HISTORY_DSN", path)
	code, out, _ = runCLI("history", "--server", "s2", "--since", "35m", "--limit", "2")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	// Fires at -1m, -11m, -21m, -31m are within 35 minutes; s2 ran -1m and -21m.
	if n := strings.Count(out, " s2 "); n != 2 || strings.Contains(out, " s1 ") || strings.Contains(out, "more:") {
		t.Errorf("--server s2 --since 35m:\n%s", out)
	}
	code, out, _ = runCLI("history", "--limit", "5")
	m := regexp.MustCompile(`more: --before (\d+)`).FindStringSubmatch(out)
	if code != exitOK || m == nil {
		t.Fatalf("first page: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI("history", "--limit", "5", "--before", m[1], "-o", "json")
	var p history.Page
	if err := json.Unmarshal([]byte(out), &p); code != exitOK || err != nil || len(p.Executions) != 5 || p.Executions[0].Item != 6 {
		t.Fatalf("second page: exit %d %v %+v", code, err, p)
	}

	code, out, _ = runCLI("history", "a", "--events")
	if code != exitOK || !regexp.MustCompile(`(?m)^ID\s+AT\s+JOB\s+SERVER\s+KIND\s+UNITS\s+DETAIL$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^3\s+.*\ba\s+s1\s+paused\s+0\s+d-paused$`).MatchString(out) || strings.Count(out, "\n") != 4 {
		t.Errorf("--events:\n%s", out)
	}
	code, out, _ = runCLI("history", "--events", "--kind", "leader", "--json")
	var ep history.EventPage
	if err := json.Unmarshal([]byte(out), &ep); code != exitOK || err != nil || len(ep.Events) != 1 || ep.Events[0].Kind != "leader" {
		t.Errorf("--events --kind leader: exit %d %v %s", code, err, out)
	}
	code, out, _ = runCLI("history", "nosuchjob")
	if code != exitOK || out != "no executions\n" {
		t.Errorf("unknown job: exit %d %q", code, out)
	}

	for _, c := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"history", "--since", "yesterday"}, exitUsage, "--since"},
		{[]string{"history", "--until", "1h", "--since", "10m"}, exitUsage, "--since"},
		{[]string{"history", "--limit", "0"}, exitUsage, "--limit"},
		{[]string{"history", "--output-width", "-1"}, exitUsage, "--output-width"},
		{[]string{"history", "--limit", "5000"}, exitUsage, "--limit"},
		{[]string{"history", "--before", "x"}, exitUsage, "--before"},
		{[]string{"history", "--history-driver", "mysql"}, exitUsage, "--history-driver"},
		{[]string{"history", "--history-driver", "postgres", "--history-dsn", ""}, exitUsage, "--history-dsn"},
		{[]string{"history", "--zk", "127.0.0.1:1"}, exitUsage, "zk"},
		{[]string{"history", "a", "b"}, exitUsage, `unexpected argument "b"`},
		{[]string{"history", "--history-dsn", filepath.Join(t.TempDir(), "none.db")}, exitFailed, "no history database at"},
	} {
		code, out, errOut := runCLI(c.args...)
		if code != c.code || !strings.Contains(errOut, c.say) || out != "" {
			t.Errorf("%v: exit %d, want %d; stderr %q lacks %q (stdout %q)", c.args, code, c.code, errOut, c.say, out)
		}
	}
	code, out, _ = runCLI("help", "history")
	if code != exitOK || !strings.Contains(out, "--history-dsn") || strings.Contains(out, "--zk") {
		t.Errorf("help history: exit %d\n%s", code, out)
	}
	if code, out, _ = runCLI("help"); code != exitOK || !strings.Contains(out, "history [JOB]") {
		t.Errorf("help lacks history:\n%s", out)
	}
}

// TestHistoryCommandPostgres reads a PostgreSQL history named by the
// environment.
func TestHistoryCommandPostgres(t *testing.T) {
	srv := pgtest.StartT(t)
	t.Setenv("SHARDJOB_HISTORY_DRIVER", "postgres")
	t.Setenv("SHARDJOB_HISTORY_DSN", srv.DSN)
	code, _, errOut := runCLI("history")
	if code != exitFailed || !strings.Contains(errOut, "no table") {
		t.Errorf("before any recorder: exit %d %q", code, errOut)
	}
	writeHistory(t, history.Config{Driver: history.DriverPostgres, DSN: srv.DSN})
	code, out, errOut := runCLI("history", "b", "--failed")
	if code != exitOK || strings.Count(out, " failure ") != 0 || !strings.Contains(out, "no executions") {
		// b never fails: items 1, 3, ... are not multiples of 4.
		t.Errorf("b --failed: exit %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI("history", "a", "--failed")
	if code != exitOK || strings.Count(out, " failure ") != 3 {
		t.Errorf("a --failed: exit %d\n%s", code, out)
	}
}
