package jobhttp_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
)

// hidden reports whether the first element matching sel exists and is not
// displayed.
func (tb *tab) hidden(sel string) bool {
	tb.t.Helper()
	var ok bool
	tb.run(chromedp.WaitReady(sel, chromedp.ByQuery), evaluate(fmt.Sprintf(
		`(() => { const e = document.querySelector(%s); return !!e && e.offsetParent === null && getComputedStyle(e).display === "none"; })()`, js(sel)), &ok))
	return ok
}

// waitRole waits until the page has learnt its token's role.
func (tb *tab) waitRole(role string) {
	tb.t.Helper()
	tb.run(chromedp.WaitReady(fmt.Sprintf(`body[data-role=%q]`, role), chromedp.ByQuery))
}

// TestConsoleRoles: the page hides what its token's role may not do — a
// viewer sees no trigger, an operator no remove nor the audit page — an
// operator's trigger runs, and the admin's audit page shows who did it.
func TestConsoleRoles(t *testing.T) {
	rec := openRecorderOn(t, history.Config{DSN: filepath.Join(t.TempDir(), "h.db")})
	cc := newConsoleCluster(t, jobhttp.Options{Tokens: roleTokens(), Audit: historyhttp.Audit(rec)}, consoleSetup{}, quiet("report", 4))
	trigger := `button[data-action="trigger"][data-job="report"]`

	tb := newTab(t)
	tb.open(cc.console)
	tb.setToken(viewerSecret)
	tb.waitRole("viewer")
	tb.waitText("#role", "vera (viewer)")
	for _, sel := range []string{trigger, `button[data-action="remove"][data-job="report"]`, "#new-job", `#nav a[data-view="audit"]`} {
		if !tb.hidden(sel) {
			t.Errorf("a viewer sees %s", sel)
		}
	}
	tb.open(cc.console + "#/job/report")
	tb.waitRole("viewer")
	tb.waitText("#job-servers", "a1", "a2")
	for _, sel := range []string{"#job-trigger", "#edit-form", "#backfill-form", `button[data-action="pause"]`} {
		if !tb.hidden(sel) {
			t.Errorf("a viewer sees %s on the job's page", sel)
		}
	}

	// The server enforces the role whatever the page shows.
	cc.api().want(403, "POST", "/jobs/report/trigger", viewerSecret, "")

	tb.click("#token-forget")
	tb.setToken(operatorSecret)
	tb.waitRole("operator")
	tb.open(cc.console + "#/jobs")
	tb.waitRole("operator")
	if !tb.hidden(`button[data-action="remove"][data-job="report"]`) {
		t.Errorf("an operator sees the remove button")
	}
	tb.click(trigger)
	tb.waitText("#notice", "Trigger report: done")
	httpWaitFor(t, "the triggered items", func() bool { return cc.ran("report", job.KindTrigger) == 4 })

	tb.click("#token-forget")
	tb.setToken(adminSecret)
	tb.waitRole("admin")
	tb.click(`#nav a[data-view="audit"]`)
	tb.waitText("#audit-body", "otto (operator)", "trigger", "job report", "ok", "vera (viewer)", "refused", "needs the operator role")
	tb.fill("#a-who", "otto")
	tb.click(`#audit-form button[type="submit"]`)
	// The filter's page comes: otto's entries, vera's gone.
	tb.run(chromedp.Poll(`(() => { const t = document.querySelector("#audit-body").textContent; return t.includes("otto (operator)") && !t.includes("vera"); })()`,
		nil, chromedp.WithPollingInterval(50*time.Millisecond)))
}
