package jobhttp_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/jobhttp"
)

// TestConsoleCreatesAndRemovesAJob: the jobs page's "New job" form creates
// an http job from its YAML document, which a following instance runs; a
// bad document's refusal is shown as text and stores nothing; the job's
// Remove action stops it on the follower and deletes its definition.
func TestConsoleCreatesAndRemovesAJob(t *testing.T) {
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, quiet("base", 1))
	f1 := follower(t, cc.ns, "f1")
	ep := newEndpoint(t)
	// Each registry read has its own deadline: the browser's steps before
	// one may take long on a busy machine.
	exists := func(key string) (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ok, _, err := cc.rc.Exists(ctx, key)
		return ok, err
	}

	tb := newTab(t)
	tb.open(cc.console)
	tb.setToken(consoleToken)
	tb.waitText("#jobs-table", "base")
	tb.click("#new-job summary")
	var example string
	tb.run(evaluate(`document.querySelector("#new-job-doc").value`, &example))
	if !strings.Contains(example, "type: http") {
		t.Fatalf("the new-job form's example: %q", example)
	}

	doc := fmt.Sprintf("name: ping\ncron: \"* * * * * *\"\nshardingTotalCount: 1\ntype: http\nhttp:\n  url: %s\n  allowPrivateAddresses: true\n", ep.srv.URL)
	tb.fill("#new-job-doc", doc+"  methd: GET\n")
	tb.click("#new-job-create")
	tb.waitText("#new-job-error", "http.methd at line 8: unknown key", `did you mean "method"?`)
	tb.waitText("#notice", "Create job: refused (HTTP 400)")
	if ok, err := exists(layout.Job("ping").Root()); err != nil || ok {
		t.Fatalf("a refused document left the job's node: %v %v", ok, err)
	}

	tb.fill("#new-job-doc", doc)
	tb.click("#new-job-create")
	tb.waitText("#notice", "Create job: done", "job ping created (type http)")
	tb.waitText("#jobs-table", "ping")
	httpWaitFor(t, "the follower to run the job created in the console", func() bool { return ep.hits()["f1"] > 0 })

	remove := `button[data-action="remove"][data-job="ping"]`
	tb.click(remove)
	tb.waitText(remove, "Click again to remove")
	if !slices.Contains(f1.Jobs(), "ping") {
		t.Fatal("one click removed the job")
	}
	tb.click(remove)
	tb.waitText("#notice", "Remove ping: done", "job ping removed", "stopped on f1")
	httpWaitFor(t, "the follower to drop the removed job", func() bool { return !slices.Contains(f1.Jobs(), "ping") })
	if ok, err := exists(layout.Job("ping").Definition()); err != nil || ok {
		t.Fatalf("the definition outlived the remove: %v %v", ok, err)
	}
	tb.waitText("#jobs-count", "1 job")
}
