package jobhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
	"github.com/shardjob/shardjob/jobtype"
	"github.com/shardjob/shardjob/jobtype/httpjob"
	"github.com/shardjob/shardjob/regcenter"
)

// follower is an instance of namespace ns with no jobs of its own that
// follows the namespace's job definitions until the test ends.
func follower(t *testing.T, ns, id string) *job.Scheduler {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := regcenter.NewZooKeeper(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: ns, SessionTimeout: 4 * time.Second}, regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := job.NewScheduler(rc, job.WithServerID(id), job.WithLogger(testLogger(t).With("instance", id)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	fctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- jobfile.Follow(fctx, s, rc, jobfile.FollowOptions{Options: jobfile.Options{Logger: testLogger(t).With("instance", id)}})
	}()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Follow: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Follow did not end")
		}
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(sctx); err != nil {
			t.Errorf("shutdown %s: %v", id, err)
		}
		if err := rc.Close(); err != nil {
			t.Errorf("close %s: %v", id, err)
		}
	})
	return s
}

// endpoint counts an HTTP job's requests by the server that sent them.
type endpoint struct {
	srv *httptest.Server
	mu  sync.Mutex
	by  map[string]int
}

func newEndpoint(t *testing.T) *endpoint {
	e := &endpoint{by: map[string]int{}}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c jobtype.Context
		if err := json.Unmarshal([]byte(r.Header.Get(httpjob.DefaultContextHeader)), &c); err != nil {
			http.Error(w, "no context", http.StatusBadRequest)
			return
		}
		e.mu.Lock()
		e.by[c.ServerID]++
		e.mu.Unlock()
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *endpoint) hits() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for k, v := range e.by {
		out[k] = v
	}
	return out
}

func TestCreateJobOverHTTPThenRemoveIt(t *testing.T) {
	const token = "create-token"
	hc := newHTTPCluster(t, job.Config{Name: "base", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}, token)
	f1 := follower(t, hc.ns, "f1")
	ep := newEndpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	doc := fmt.Sprintf("name: ping\ncron: \"* * * * * *\"\nshardingTotalCount: 2\ntype: http\nhttp:\n  url: %s\n  timeout: 5s\n  allowPrivateAddresses: true\n", ep.srv.URL)

	hc.want(http.StatusUnauthorized, "POST", "/jobs", "", doc)
	hc.want(http.StatusUnauthorized, "POST", "/jobs", "wrong", doc)
	for _, bad := range []struct{ doc, want string }{
		{strings.Replace(doc, "shardingTotalCount", "shardingTotalCont", 1), `unknown key \"shardingTotalCont\" at line 3 (did you mean \"shardingTotalCount\"?)`},
		{strings.Replace(doc, "  timeout", "  timout", 1), `http.timout at line 7: unknown key (did you mean \"timeout\"?)`},
		{"name: ping\ncron: \"* * * * * *\"\nshardingTotalCount: 2\n", "only script and http jobs"},
		{"{{{", "job"},
	} {
		body := hc.want(http.StatusBadRequest, "POST", "/jobs", token, bad.doc)
		if !strings.Contains(body, bad.want) {
			t.Errorf("refusal of %q: %s; want it to contain %s", bad.doc, body, bad.want)
		}
	}
	if ok, _, err := hc.rc.Exists(ctx, layout.Job("ping").Root()); err != nil || ok {
		t.Fatalf("a refused document left the job's node: %v %v", ok, err)
	}

	body := hc.want(http.StatusCreated, "POST", "/jobs", token, doc)
	if !strings.Contains(body, `"job": "ping"`) && !strings.Contains(body, `"job":"ping"`) {
		t.Fatalf("create answered %s", body)
	}
	hc.want(http.StatusConflict, "POST", "/jobs", token, doc)
	hc.want(http.StatusConflict, "POST", "/jobs", token, strings.Replace(doc, "name: ping", "name: base", 1))
	if list := hc.want(http.StatusOK, "GET", "/jobs", "", ""); !strings.Contains(list, `"ping"`) {
		t.Fatalf("GET /jobs does not list the created job: %s", list)
	}
	httpWaitFor(t, "the follower to run the created job", func() bool { return ep.hits()["f1"] >= 2 })
	if by := ep.hits(); len(by) != 1 {
		t.Fatalf("requests by server %v: only the follower runs definitions", by)
	}

	hc.want(http.StatusOK, "POST", "/jobs/ping/remove", token, "")
	httpWaitFor(t, "the follower to drop the removed job", func() bool { return !slices.Contains(f1.Jobs(), "ping") })
	if ok, _, err := hc.rc.Exists(ctx, layout.Job("ping").Definition()); err != nil || ok {
		t.Fatalf("the definition outlived the remove: %v %v", ok, err)
	}
	// The name is free again: the same document is created anew and runs.
	before := ep.hits()["f1"]
	hc.want(http.StatusCreated, "POST", "/jobs", token, doc)
	httpWaitFor(t, "the follower to run the job created again", func() bool { return ep.hits()["f1"] > before })
}

func TestCreateIsRefusedWithoutAToken(t *testing.T) {
	hc := newHTTPCluster(t, job.Config{Name: "base", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}, "")
	hc.want(http.StatusForbidden, "POST", "/jobs", "", "name: x\ncron: \"* * * * * *\"\nshardingTotalCount: 1\ntype: http\nhttp: {url: \"http://127.0.0.1:1/\"}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if ok, _, err := hc.rc.Exists(ctx, layout.Job("x").Root()); err != nil || ok {
		t.Fatalf("a refused create left the job's node: %v %v", ok, err)
	}
}
