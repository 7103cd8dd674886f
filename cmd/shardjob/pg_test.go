package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
)

// resolveConfig runs the connection flags args through regcenterConfig
// with getenv as the environment.
func resolveConfig(t *testing.T, getenv func(string) string, args ...string) (urlGot string, servers []string, err error) {
	t.Helper()
	var o options
	fs := newFlagSet(lookup("status"), &o)
	if _, err := parseArgs(fs, args); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg, err := regcenterConfig(&o, set, getenv)
	return cfg.URL, cfg.Servers, err
}

// --pg and SHARDJOB_REGCENTER_PG (or SHARDJOB_REGCENTER_URL) name a
// PostgreSQL registry by URL; a flag naming one registry replaces another
// named by a weaker source, two at one level are refused, and a password
// in a URL on the command line is refused without being repeated.
func TestPostgresFlagAndEnvironment(t *testing.T) {
	t.Setenv("SHARDJOB_REGCENTER_SERVERS", "")
	t.Setenv("SHARDJOB_REGCENTER_ETCD", "")
	t.Setenv("SHARDJOB_REGCENTER_URL", "")
	t.Setenv("SHARDJOB_REGCENTER_PG", "")
	const pgURL = "postgres://shardjob@db.example:5432/jobs"
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	if u, servers, err := resolveConfig(t, getenv, "--pg", pgURL); err != nil || u != pgURL || len(servers) != 0 {
		t.Errorf("--pg: url %q servers %v err %v", u, servers, err)
	}
	env["SHARDJOB_REGCENTER_URL"] = pgURL
	if u, _, err := resolveConfig(t, getenv); err != nil || u != pgURL {
		t.Errorf("SHARDJOB_REGCENTER_URL: url %q err %v", u, err)
	}
	if u, servers, err := resolveConfig(t, getenv, "--zk", "z:1"); err != nil || u != "" || strings.Join(servers, ",") != "z:1" {
		t.Errorf("--zk over SHARDJOB_REGCENTER_URL: url %q servers %v err %v", u, servers, err)
	}
	dir := t.TempDir()
	if u, _, err := resolveConfig(t, getenv, "--embedded", dir); err != nil || u != "" {
		t.Errorf("--embedded over SHARDJOB_REGCENTER_URL: url %q err %v", u, err)
	}
	delete(env, "SHARDJOB_REGCENTER_URL")
	env["SHARDJOB_REGCENTER_PG"] = pgURL
	if u, _, err := resolveConfig(t, getenv); err != nil || u != pgURL {
		t.Errorf("SHARDJOB_REGCENTER_PG: url %q err %v", u, err)
	}
	if u, servers, err := resolveConfig(t, getenv, "--zk", "z:1"); err != nil || u != "" || strings.Join(servers, ",") != "z:1" {
		t.Errorf("--zk over SHARDJOB_REGCENTER_PG: url %q servers %v err %v", u, servers, err)
	}
	delete(env, "SHARDJOB_REGCENTER_PG")
	env["SHARDJOB_REGCENTER_SERVERS"] = "env:2181"
	if u, servers, err := resolveConfig(t, getenv, "--pg", pgURL); err != nil || u != pgURL || len(servers) != 0 {
		t.Errorf("--pg over SHARDJOB_REGCENTER_SERVERS: url %q servers %v err %v", u, servers, err)
	}
	zkFile := writeFile(t, "zk.yaml", "regcenter:\n  servers: [file:2181]\n  namespace: filens\njobs: []\n")
	if u, servers, err := resolveConfig(t, getenv, "--config", zkFile, "--pg", pgURL); err != nil || u != pgURL || len(servers) != 0 {
		t.Errorf("--pg over a file with servers: url %q servers %v err %v", u, servers, err)
	}
	pgFile := writeFile(t, "pg.yaml", "regcenter:\n  url: "+pgURL+"\n  namespace: filens\njobs: []\n")
	if u, servers, err := resolveConfig(t, getenv, "--config", pgFile, "--zk", "z:1"); err != nil || u != "" || strings.Join(servers, ",") != "z:1" {
		t.Errorf("--zk over a file with url: url %q servers %v err %v", u, servers, err)
	}
	pgKeyFile := writeFile(t, "pgkey.yaml", "regcenter:\n  postgres: "+pgURL+"\n  namespace: filens\njobs: []\n")
	if u, servers, err := resolveConfig(t, getenv, "--config", pgKeyFile); err != nil || u != pgURL || len(servers) != 0 {
		t.Errorf("a file with postgres: url %q servers %v err %v", u, servers, err)
	}

	// Refused: two registries at one level, a password on argv.
	env = map[string]string{}
	for _, c := range []struct {
		args []string
		env  map[string]string
		say  []string
		not  string
	}{
		{[]string{"--pg", pgURL, "--zk", "z:1"}, nil, []string{"--zk", "--pg", "not both"}, ""},
		{[]string{"--etcd", "e:1", "--pg", pgURL}, nil, []string{"--etcd", "--pg", "not both"}, ""},
		{[]string{"--pg", pgURL, "--embedded", dir}, nil, []string{"--embedded", "--pg", "not both"}, ""},
		{nil, map[string]string{"SHARDJOB_REGCENTER_URL": pgURL, "SHARDJOB_REGCENTER_SERVERS": "z:1"},
			[]string{"SHARDJOB_REGCENTER_SERVERS", "SHARDJOB_REGCENTER_URL", "not both"}, ""},
		{[]string{"--pg", "postgres://shardjob:hunter2@db.example:5432/jobs"}, nil,
			[]string{"--pg", "command line", "PGPASSWORD", "passfile", "--digest-file"}, "hunter2"},
		{[]string{"--pg", "mysql://db.example/jobs"}, nil, []string{`no registry for scheme "mysql"`}, ""},
		{nil, map[string]string{"SHARDJOB_REGCENTER_PG": pgURL, "SHARDJOB_REGCENTER_ETCD": "e:1"},
			[]string{"SHARDJOB_REGCENTER_ETCD", "SHARDJOB_REGCENTER_PG", "not both"}, ""},
		{nil, map[string]string{"SHARDJOB_REGCENTER_PG": pgURL, "SHARDJOB_REGCENTER_URL": pgURL},
			[]string{"SHARDJOB_REGCENTER_URL", "SHARDJOB_REGCENTER_PG", "not both"}, ""},
		{nil, nil, []string{"no registry given", "--pg", "SHARDJOB_REGCENTER_PG", "SHARDJOB_REGCENTER_URL"}, ""},
	} {
		env = c.env
		_, _, err := resolveConfig(t, getenv, c.args...)
		if err == nil {
			t.Errorf("%v %v: accepted", c.args, c.env)
			continue
		}
		if exitCode(err) != exitUsage {
			t.Errorf("%v: exit code %d for %v, want usage", c.args, exitCode(err), err)
		}
		for _, s := range c.say {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%v %v: %q does not say %q", c.args, c.env, err, s)
			}
		}
		if c.not != "" && strings.Contains(err.Error(), c.not) {
			t.Errorf("%v: %q repeats the password", c.args, err)
		}
	}
	if cmd, rest := findCommand([]string{"--pg", pgURL, "jobs"}); cmd != "jobs" || len(rest) != 2 {
		t.Errorf("findCommand with --pg first: %q %v", cmd, rest)
	}

	// shardjob run: the same refusals, and --embedded or --pg replace
	// the file's url.
	script := "jobs:\n  - name: a\n    type: script\n    cron: '@hourly'\n    shardingTotalCount: 1\n    script: {command: [/bin/true]}\n"
	file := writeJobsFile(t, "regcenter:\n  url: "+pgURL+"\n  namespace: x\n"+script)
	for _, c := range []struct {
		args []string
		say  []string
	}{
		{[]string{"--pg", "postgres://shardjob:hunter2@db.example/jobs", file}, []string{"--pg", "PGPASSWORD", "passfile", "--digest-file"}},
		{[]string{"--pg", pgURL, "--embedded", dir, file}, []string{"--embedded", "--pg", "not both"}},
		{[]string{"--pg", "mysql://db.example/jobs", file}, []string{"--pg:", `no registry for scheme "mysql"`}},
	} {
		var out, errb testlog.Buffer
		code := runFileCtx(context.Background(), c.args, &out, &errb)
		for _, s := range c.say {
			if code != exitUsage || !strings.Contains(errb.String(), s) {
				t.Errorf("run %v: exit %d, stderr %q; want exit %d and %q", c.args, code, errb.String(), exitUsage, s)
			}
		}
		if strings.Contains(errb.String(), "hunter2") {
			t.Errorf("run %v: stderr %q repeats the password", c.args, errb.String())
		}
	}
}

// TestPostgresCLISmoke runs the everyday commands with --pg against three
// schedulers on a PostgreSQL registry, reads it from
// SHARDJOB_REGCENTER_URL, and runs a script job with shardjob run --pg.
func TestPostgresCLISmoke(t *testing.T) {
	t.Setenv("SHARDJOB_REGCENTER_SERVERS", "")
	t.Setenv("SHARDJOB_REGCENTER_ETCD", "")
	t.Setenv("SHARDJOB_REGCENTER_URL", "")
	dbURL := pgtest.NewDatabaseT(t)
	// Fires on January 1st only: every execution here is a trigger.
	cfg := job.Config{Name: "report", Cron: "0 0 0 1 1 *", ShardingTotalCount: 6}
	c := &cluster{t: t, ns: newNamespace(), name: cfg.Name, pgURL: dbURL, rec: &recorder{}, inst: map[string]*instance{}}
	for _, id := range []string{"s1", "s2", "s3"} {
		c.inst[id] = c.start(id, cfg)
	}
	waitFor(t, 30*time.Second, "three instances online", func() bool {
		st := c.status()
		for _, s := range st.Servers {
			if !s.Online {
				return false
			}
		}
		return len(st.Servers) == 3
	})
	var jobs []admin.JobSummary
	if err := json.Unmarshal([]byte(c.mustCLI("jobs", "-o", "json")), &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Name != "report" || jobs[0].Online != 3 || jobs[0].ShardingTotalCount != 6 {
		t.Errorf("jobs: %+v", jobs)
	}
	if out := c.mustCLI("trigger", "report"); !strings.Contains(out, "triggered report on s1, s2, s3") {
		t.Errorf("trigger output:\n%s", out)
	}
	waitFor(t, 30*time.Second, "six triggered executions", func() bool { return len(c.rec.all()) >= 6 })
	waitFor(t, 30*time.Second, "the trigger to finish", c.idle)
	count := map[int]int{}
	for _, e := range c.rec.all() {
		count[e.item]++
	}
	for it := range 6 {
		if count[it] != 1 {
			t.Errorf("item %d ran %d times, want once", it, count[it])
		}
	}

	// The environment stands in for --pg.
	t.Setenv("SHARDJOB_REGCENTER_URL", dbURL)
	t.Setenv("SHARDJOB_REGCENTER_NAMESPACE", c.ns)
	if code, out, errOut := runCLI("status", "report", "-o", "json"); code != 0 || !strings.Contains(out, `"report"`) {
		t.Errorf("status from the environment: exit %d %q %q", code, out, errOut)
	}
	t.Setenv("SHARDJOB_REGCENTER_URL", "")
	t.Setenv("SHARDJOB_REGCENTER_NAMESPACE", "")

	// shardjob run --pg runs a file's script job on the database, whatever
	// the file's regcenter section names.
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	path := writeJobsFile(t, fmt.Sprintf(`regcenter:
  servers: [127.0.0.1:1]
  namespace: %s
jobs:
  - name: hello
    type: script
    cron: "* * * * * *"
    shardingTotalCount: 2
    script:
      command: [/bin/sh, -c, 'echo "$0" >> %s', item]
`, newNamespace(), ran))
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	var stdout, stderr testlog.Buffer
	done := make(chan int, 1)
	go func() { // owned here: ends when runCtx is cancelled below
		done <- runFileCtx(runCtx, []string{"--pg", dbURL, "--server-id", "pg-run", "--state-dir", filepath.Join(dir, "state"), path}, &stdout, &stderr)
	}()
	waitFor(t, 60*time.Second, "two script runs", func() bool {
		select {
		case code := <-done:
			t.Fatalf("shardjob run ended with %d: %s", code, stderr.String())
		default:
		}
		data, _ := os.ReadFile(ran)
		return strings.Count(string(data), "\n") >= 2
	})
	stop()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after stop: %s", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("shardjob run did not stop")
	}
}
