package jobfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
	"github.com/shardjob/shardjob/jobtype"
	"github.com/shardjob/shardjob/jobtype/httpjob"
	"github.com/shardjob/shardjob/regcenter"
)

// logBuffer collects log lines, safe for the logger's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) count(substr ...string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, line := range strings.Split(b.buf.String(), "\n") {
		all := true
		for _, s := range substr {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}

// follow runs jobfile.Follow on in until the test ends.
func follow(t *testing.T, in *instance, o jobfile.FollowOptions) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- jobfile.Follow(ctx, in.sched, in.rc, o) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Follow: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Follow did not return after its context ended")
		}
	})
}

// hits is an HTTP endpoint that counts the requests of an HTTP job, by the
// server that sent them.
type hits struct {
	srv *httptest.Server
	mu  sync.Mutex
	by  map[string]int
}

func newHits(t *testing.T) *hits {
	h := &hits{by: map[string]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c jobtype.Context
		if err := json.Unmarshal([]byte(r.Header.Get(httpjob.DefaultContextHeader)), &c); err != nil {
			http.Error(w, "no context", http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.by[c.ServerID]++
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hits) count() (total int, by map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	by = map[string]int{}
	for k, v := range h.by {
		by[k] = v
		total += v
	}
	return total, by
}

func httpDefinition(name, url string) string {
	return fmt.Sprintf("name: %s\ncron: \"* * * * * *\"\nshardingTotalCount: 2\ntype: http\nhttp:\n  url: %s\n  allowPrivateAddresses: true\n  timeout: 5s\n", name, url)
}

func hasJob(s *job.Scheduler, name string) bool { return slices.Contains(s.Jobs(), name) }

func TestFollowRunsDefinedHTTPJobAndStopsItWhenDeleted(t *testing.T) {
	ns := namespace()
	f, _ := file(t, ns, "")
	h := newHits(t)
	follower := start(t, f, "follower", "")
	follow(t, follower, jobfile.FollowOptions{Options: jobfile.Options{Logger: testlog.Logger(t)}})
	bystander := start(t, f, "bystander", "") // does not follow

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sp, err := jobfile.Define(ctx, follower.rc, []byte(httpDefinition("ping", h.srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Name != "ping" || sp.Type != jobfile.TypeHTTP {
		t.Fatalf("defined %+v", sp)
	}
	waitFor(t, "the follower to run the defined job", 60*time.Second, func() bool {
		n, _ := h.count()
		return n >= 2
	})
	if _, by := h.count(); len(by) != 1 || by["follower"] == 0 {
		t.Fatalf("requests by server: %v (only the follower runs definitions)", by)
	}
	if hasJob(bystander.sched, "ping") {
		t.Fatal("an instance that does not follow added the defined job")
	}
	stored, _, err := follower.rc.Get(ctx, layout.Job("ping").Definition())
	if err != nil || string(stored) != httpDefinition("ping", h.srv.URL) {
		t.Fatalf("definition node: %q, %v", stored, err)
	}

	// A second definition of the same name is refused, changing nothing.
	if _, err := jobfile.Define(ctx, follower.rc, []byte(httpDefinition("ping", "http://127.0.0.1:1/"))); !errors.Is(err, jobfile.ErrJobExists) {
		t.Fatalf("defining ping again: %v", err)
	}
	if again, _, _ := follower.rc.Get(ctx, layout.Job("ping").Definition()); !bytes.Equal(again, stored) {
		t.Fatalf("the refused definition changed the stored one: %q", again)
	}

	// Deleting the definition removes the job from the follower.
	if err := follower.rc.Delete(ctx, layout.Job("ping").Definition(), -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to drop the deleted definition's job", 30*time.Second, func() bool {
		return !hasJob(follower.sched, "ping")
	})
	waitFor(t, "the follower's status node to go", 30*time.Second, func() bool {
		ok, _, err := follower.rc.Exists(ctx, layout.Job("ping").Flag("follower", layout.Status))
		return err == nil && !ok
	})
}

func TestFollowReplacesAChangedDefinition(t *testing.T) {
	ns := namespace()
	f, _ := file(t, ns, "")
	before, after := newHits(t), newHits(t)
	in := start(t, f, "r1", "")
	follow(t, in, jobfile.FollowOptions{Options: jobfile.Options{Logger: testlog.Logger(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := jobfile.Define(ctx, in.rc, []byte(httpDefinition("sync", before.srv.URL))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first definition to run", 60*time.Second, func() bool { n, _ := before.count(); return n > 0 })
	if _, err := in.rc.Set(ctx, layout.Job("sync").Definition(), []byte(httpDefinition("sync", after.srv.URL)), -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the changed definition to run", 60*time.Second, func() bool { n, _ := after.count(); return n > 0 })
	if !hasJob(in.sched, "sync") {
		t.Fatal("the replaced job is not on the scheduler")
	}
}

func TestFollowRunsScriptDefinitionsOnlyWhenAllowed(t *testing.T) {
	ns := namespace()
	f, _ := file(t, ns, "")
	dir := t.TempDir()
	out := filepath.Join(dir, "runs")
	sh := writeScript(t, dir, "record.sh", `eval "ctx=\${$#}"; printf '%s\n' "$ctx" >> "$1"`+"\n")

	var logs logBuffer
	httpOnly := start(t, f, "http-only", filepath.Join(dir, "a"))
	follow(t, httpOnly, jobfile.FollowOptions{Options: jobfile.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	scripts := start(t, f, "scripts", filepath.Join(dir, "b"))
	follow(t, scripts, jobfile.FollowOptions{AllowScript: true, Options: jobfile.Options{StateDir: filepath.Join(dir, "b"), Logger: testlog.Logger(t)}})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	def := fmt.Sprintf("name: report\ncron: \"* * * * * *\"\nshardingTotalCount: 2\ntype: script\nscript:\n  command: [%s, %s]\n", sh, out)
	if _, err := jobfile.Define(ctx, httpOnly.rc, []byte(def)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both items of a fire on the instance that allows scripts", 60*time.Second, func() bool {
		_, by, ok := fullFireOn(runs(t, out), 2)
		return ok && len(by["scripts"]) == 2
	})
	for _, c := range runs(t, out) {
		if c.ServerID != "scripts" {
			t.Fatalf("the script ran on %s, which does not allow script definitions", c.ServerID)
		}
	}
	waitFor(t, "the refusal in the log", 30*time.Second, func() bool {
		return logs.count("job definition refused", "job=report", "AllowScript") > 0
	})
	if hasJob(httpOnly.sched, "report") {
		t.Fatal("the instance without AllowScript added the script job")
	}
	// The definition written again unchanged is read again, and not
	// refused (nor logged) a second time.
	if _, err := httpOnly.rc.Set(ctx, layout.Job("report").Definition(), []byte(def), -1); err != nil {
		t.Fatal(err)
	}
	// A definition written after it is read after it: once that one is
	// running, the rewrite has been read.
	if _, err := jobfile.Define(ctx, httpOnly.rc, []byte(httpDefinition("marker", newHits(t).srv.URL))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to add the next definition", 30*time.Second, func() bool { return hasJob(httpOnly.sched, "marker") })
	if n := logs.count("job definition refused", "job=report"); n != 1 {
		t.Fatalf("the refusal was logged %d times, want once:\n%s", n, logs.buf.String())
	}
}

// fullFireOn returns a fire that ran every item of total, on any servers.
func fullFireOn(cs []jobtype.Context, total int) (time.Time, map[string][]int, bool) {
	byFire := map[time.Time]map[int]string{}
	for _, c := range cs {
		if c.Kind != string(job.KindFire) {
			continue
		}
		if byFire[c.FireTime] == nil {
			byFire[c.FireTime] = map[int]string{}
		}
		byFire[c.FireTime][c.ShardingItem] = c.ServerID
	}
	for f, items := range byFire {
		if len(items) == total {
			by := map[string][]int{}
			for it, s := range items {
				by[s] = append(by[s], it)
			}
			return f, by, true
		}
	}
	return time.Time{}, nil, false
}

func TestFollowLogsGarbageAndGoesOn(t *testing.T) {
	ns := namespace()
	f, _ := file(t, ns, "")
	h := newHits(t)
	var logs logBuffer
	in := start(t, f, "g1", "")
	follow(t, in, jobfile.FollowOptions{Options: jobfile.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Written behind the API's back: garbage, a definition naming another
	// job, and a Go job's definition.
	cfg, err := job.Config{Name: "x", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{
		"garbage":  "{{{ not: yaml",
		"misnamed": httpDefinition("other", h.srv.URL),
		"gojob":    "name: gojob\ncron: \"* * * * * *\"\nshardingTotalCount: 1\n",
	} {
		p := layout.Job(name)
		c := bytes.Replace(cfg, []byte("name: x"), []byte("name: "+name), 1)
		if err := in.rc.Multi(ctx, regcenter.CreateOp{Path: p.Root()}, regcenter.CreateOp{Path: p.Config(), Data: c},
			regcenter.CreateOp{Path: p.Definition(), Data: []byte(doc)}); err != nil {
			t.Fatal(err)
		}
	}
	// Then a good one, which runs: the follower went on.
	if _, err := jobfile.Define(ctx, in.rc, []byte(httpDefinition("good", h.srv.URL))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the good definition to run", 60*time.Second, func() bool { n, _ := h.count(); return n > 0 })
	for _, want := range [][]string{
		{"job definition refused", "job=garbage"},
		{"job definition refused", "job=misnamed", `names job \"other\"`},
		{"job definition refused", "job=gojob", "only script and http"},
	} {
		if logs.count(want...) != 1 {
			t.Errorf("no single log line with %q:\n%s", want, logs.buf.String())
		}
	}
	if got := in.sched.Jobs(); !slices.Equal(got, []string{"good"}) {
		t.Fatalf("jobs on the follower: %v", got)
	}
}

func TestDefineRefusesBadDefinitionsChangingNothing(t *testing.T) {
	ns := namespace()
	f, _ := file(t, ns, "")
	in := start(t, f, "d1", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tt := range []struct {
		doc  string
		is   error
		want string
	}{
		{"name: bad\ncron: \"* * * * * *\"\nshardingTotalCont: 2\ntype: http\nhttp: {url: http://x/}\n", job.ErrUnknownKey, `did you mean "shardingTotalCount"`},
		{"name: bad\ncron: \"* * * * * *\"\nshardingTotalCount: 2\ntype: http\nhttp: {url: http://x/, methd: GET}\n", jobfile.ErrInvalidJob, `http.methd at line 5: unknown key (did you mean "method"?)`},
		{"name: bad\ncron: \"* * * * * *\"\nshardingTotalCount: 2\nhandler: orders\n", jobfile.ErrNotDefinable, "type simple"},
		{"name: bad\ncron: \"* * * * * *\"\nshardingTotalCount: 2\ntype: script\nscript: {command: ls}\n", jobfile.ErrInvalidJob, "shell: true"},
		{`{"name": "bad", "cron": "nope", "shardingTotalCount": 2, "type": "http", "http": {"url": "http://x/"}}`, job.ErrInvalidCron, "cron"},
		// A schedule with no fire left: every follower's Add would refuse it.
		{"name: bad\ncron: \"* * * * * *\"\nshardingTotalCount: 2\nend: \"2020-01-01\"\ntype: http\nhttp: {url: http://x/}\n", job.ErrScheduleEnded, "end"},
	} {
		_, err := jobfile.Define(ctx, in.rc, []byte(tt.doc))
		if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Define(%q) = %v; want %v containing %q", tt.doc, err, tt.is, tt.want)
		}
	}
	if ok, _, err := in.rc.Exists(ctx, layout.Job("bad").Root()); err != nil || ok {
		t.Fatalf("a refused definition left the job's node: exists=%v, %v", ok, err)
	}
	// JSON with the same keys is a definition too.
	if _, err := jobfile.Define(ctx, in.rc, []byte(`{"name": "json", "cron": "0 0 0 1 1 *", "shardingTotalCount": 1, "type": "http", "http": {"url": "http://127.0.0.1:1/", "allowPrivateAddresses": true}}`)); err != nil {
		t.Fatal(err)
	}
}
