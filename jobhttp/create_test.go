package jobhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobtype"
	"github.com/shardjob/shardjob/jobtype/httpjob"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// follower is an instance of namespace ns with no jobs of its own that
// follows the namespace's job definitions until the test ends.
func follower(t *testing.T, ns, id string) *job.Scheduler {
	t.Helper()
	return followerOn(t, ns, id, regcenter.Config{Servers: zc.Servers()})
}

// followerOn is follower on the registry rcCfg names.
func followerOn(t *testing.T, ns, id string, rcCfg regcenter.Config) *job.Scheduler {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcCfg.Namespace, rcCfg.SessionTimeout = ns, 4*time.Second
	rc, err := regcenter.Open(ctx, rcCfg, regcenter.WithLogger(testLogger(t)))
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
	// Followed once it says so: POST /jobs looks for that.
	httpWaitFor(t, id+"'s announcement that it follows http definitions", func() bool {
		ids, err := jobfile.Followers(ctx, rc, jobfile.TypeHTTP)
		return err == nil && slices.Contains(ids, id)
	})
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

// post sends POST /jobs to the handler srv serves, with the token.
func post(t *testing.T, srv *httptest.Server, query, token, doc string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL+"/jobs"+query, strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCreateAnswersOnlyForWhatAFollowerRuns: POST /jobs refuses what no
// follower would run — a definition that runs after a job no follower
// has, or on another schedule than its parent (400, as a run file and
// every follower refuse it), and a type no live instance follows (422,
// saying so, unless ?unfollowed=true) — and stores nothing for it.
func TestCreateAnswersOnlyForWhatAFollowerRuns(t *testing.T) {
	testCreateAnswersOnlyForWhatAFollowerRuns(t, regcenter.Config{Servers: zc.Servers()})
}

// TestEtcdCreateAnswersOnlyForWhatAFollowerRuns is
// TestCreateAnswersOnlyForWhatAFollowerRuns on etcd.
func TestEtcdCreateAnswersOnlyForWhatAFollowerRuns(t *testing.T) {
	testCreateAnswersOnlyForWhatAFollowerRuns(t, regcenter.Config{Etcd: etcdtest.Start(t).Endpoints()})
}

func testCreateAnswersOnlyForWhatAFollowerRuns(t *testing.T, rcCfg regcenter.Config) {
	const token = "create-token"
	hc := newHTTPClusterOn(t, job.Config{Name: "base", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}, token, rcCfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	httpDoc := func(name, extra string) string {
		return fmt.Sprintf("name: %s\ncron: \"0 0 0 1 1 *\"\nshardingTotalCount: 1\ntype: http\nhttp: {url: \"http://jobs.example.com/\"}\n%s", name, extra)
	}
	scriptDoc := "name: sh\ncron: \"0 0 0 1 1 *\"\nshardingTotalCount: 1\ntype: script\nscript: {command: [/bin/true]}\n"
	stored := func(name string) bool {
		ok, _, err := hc.rc.Exists(ctx, layout.Job(name).Root())
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	// No instance follows definitions yet.
	if body := hc.want(http.StatusUnprocessableEntity, "POST", "/jobs", token, httpDoc("early", "")); !strings.Contains(body, "no instance follows http jobs") {
		t.Errorf("unfollowed http job: %s", body)
	}
	if stored("early") {
		t.Fatal("a refused definition was stored")
	}
	body := hc.want(http.StatusCreated, "POST", "/jobs?unfollowed=true", token, httpDoc("early", ""))
	if !strings.Contains(body, "no instance follows http jobs") || !strings.Contains(body, `"followers": []`) {
		t.Errorf("created with unfollowed=true: %s; want the warning", body)
	}

	followerOn(t, hc.ns, "f1", rcCfg) // http definitions only
	if body := hc.want(http.StatusUnprocessableEntity, "POST", "/jobs", token, scriptDoc); !strings.Contains(body, "no instance follows script jobs") {
		t.Errorf("script job with no instance allowing scripts: %s", body)
	}
	if stored("sh") {
		t.Fatal("a refused script definition was stored")
	}
	if body := hc.want(http.StatusCreated, "POST", "/jobs", token, httpDoc("parent", "")); !strings.Contains(body, `"f1"`) || strings.Contains(body, "warning") {
		t.Errorf("created: %s; want its followers, f1", body)
	}

	for _, bad := range []struct{ doc, want string }{
		// base is a job of the program's, which followers do not have.
		{httpDoc("child", "after: base\n"), `job \"base\" is not defined at run time`},
		{httpDoc("child", "after: nowhere\n"), `job \"nowhere\" is not defined at run time`},
		{strings.Replace(httpDoc("child", "after: parent\n"), "0 0 0 1 1 *", "0 0 0 2 1 *", 1), "the same schedule"},
	} {
		if body := hc.want(http.StatusBadRequest, "POST", "/jobs", token, bad.doc); !strings.Contains(body, bad.want) {
			t.Errorf("refusal of %q: %s; want it to contain %s", bad.doc, body, bad.want)
		}
		if stored("child") {
			t.Fatalf("the refused %q was stored", bad.doc)
		}
	}
	hc.want(http.StatusCreated, "POST", "/jobs", token, httpDoc("child", "after: parent\n"))

	// A body template that loops without end is refused from its parse
	// tree, without rendering it, naming the field; the follower, which
	// never sees it, keeps adding the definitions after it.
	begin := time.Now()
	body = hc.want(http.StatusBadRequest, "POST", "/jobs", token,
		"name: loop\ncron: \"0 0 0 1 1 *\"\nshardingTotalCount: 1\ntype: http\nhttp: {url: \"http://jobs.example.com/\", body: \"{{range 250000000}}{{end}}\"}\n")
	t.Logf("the template loop was refused in %v: %s", time.Since(begin), body)
	if !strings.Contains(body, "body") || !strings.Contains(body, "250000000") {
		t.Errorf("refusal of a template loop: %s; want it to name the body and the range", body)
	}
	if stored("loop") {
		t.Fatal("the template loop was stored")
	}
	hc.want(http.StatusCreated, "POST", "/jobs", token, httpDoc("after-loop", ""))
	httpWaitFor(t, "f1 to add the definition after the refused one", func() bool {
		ok, _, err := hc.rc.Exists(ctx, layout.Job("after-loop").Flag("f1", layout.Status))
		return err == nil && ok
	})
}

// TestCreateKeepsTheLimitsOnDefinitions: a definition larger than
// Options.MaxDefinitionBytes is refused with 413, and one beyond
// Options.MaxDefinitions with 409, each naming its limit; a removed
// definition makes room for another.
func TestCreateKeepsTheLimitsOnDefinitions(t *testing.T) {
	testCreateKeepsTheLimitsOnDefinitions(t, regcenter.Config{Servers: zc.Servers()})
}

// TestEtcdCreateKeepsTheLimitsOnDefinitions is
// TestCreateKeepsTheLimitsOnDefinitions on etcd.
func TestEtcdCreateKeepsTheLimitsOnDefinitions(t *testing.T) {
	testCreateKeepsTheLimitsOnDefinitions(t, regcenter.Config{Etcd: etcdtest.Start(t).Endpoints()})
}

func testCreateKeepsTheLimitsOnDefinitions(t *testing.T, rcCfg regcenter.Config) {
	const token = "create-token"
	hc := newHTTPClusterOn(t, job.Config{Name: "base", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}, token, rcCfg)
	srv := httptest.NewServer(jobhttp.NewHandler(hc.rc, jobhttp.Options{Token: token, Logger: testLogger(t), MaxDefinitions: 2, MaxDefinitionBytes: 300}))
	t.Cleanup(srv.Close)
	doc := func(name, extra string) string {
		return fmt.Sprintf("name: %s\ncron: \"0 0 0 1 1 *\"\nshardingTotalCount: 1\ntype: http\nhttp: {url: \"http://jobs.example.com/\"}\n%s", name, extra)
	}
	// No instance follows them (unfollowed=true): the limits hold all
	// the same, and a remove has no instance to wait for.
	if code, body := post(t, srv, "?unfollowed=true", token, doc("big", "description: "+strings.Repeat("x", 300)+"\n")); code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "at most 300") {
		t.Errorf("a definition over the size limit: %d %s", code, body)
	}
	for _, name := range []string{"one", "two"} {
		if code, body := post(t, srv, "?unfollowed=true", token, doc(name, "")); code != http.StatusCreated {
			t.Fatalf("%s: %d %s", name, code, body)
		}
	}
	if code, body := post(t, srv, "?unfollowed=true", token, doc("three", "")); code != http.StatusConflict || !strings.Contains(body, "too many job definitions") || !strings.Contains(body, "holds 2, its limit") {
		t.Errorf("a definition over the limit: %d %s", code, body)
	}
	hc.want(http.StatusOK, "POST", "/jobs/one/remove", token, "")
	if code, body := post(t, srv, "?unfollowed=true", token, doc("three", "")); code != http.StatusCreated {
		t.Errorf("after a remove: %d %s", code, body)
	}
}
