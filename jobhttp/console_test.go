package jobhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/dispatchhttp"
)

const consoleToken = "console-test-token"

// quiet is a job that fires once a year: nothing runs unless triggered.
func quiet(name string, items int) job.Config {
	return job.Config{Name: name, Cron: "0 0 0 1 1 *", ShardingTotalCount: items}
}

// jobStatus reads one job through the handler's JSON (the token works
// with or without ProtectReads).
func (cc *consoleCluster) jobStatus(name string) admin.JobStatus {
	cc.t.Helper()
	var st admin.JobStatus
	if err := json.Unmarshal([]byte(cc.api().want(http.StatusOK, "GET", "/jobs/"+name, consoleToken, "")), &st); err != nil {
		cc.t.Fatal(err)
	}
	return st
}

// server returns the server's entry in st.
func server(t *testing.T, st admin.JobStatus, id string) admin.ServerStatus {
	t.Helper()
	for _, s := range st.Servers {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("job %s has no server %s: %+v", st.Name, id, st.Servers)
	return admin.ServerStatus{}
}

// TestConsoleOverviewShowsJobs: the overview lists a running cluster's
// jobs with their cron, status, instances online, items per instance and
// last results, served under the application's prefix; a job's page shows
// its servers and items.
func TestConsoleOverviewShowsJobs(t *testing.T) {
	orders := job.Config{Name: "orders", Cron: "* * * * * *", ShardingTotalCount: 4}
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, orders, quiet("report", 2))
	tb := newTab(t)
	tb.open(cc.console)
	tb.waitText("#jobs-table tbody tr:nth-child(1)", "orders", "ok", "* * * * * *", "2/2", "a1 2 · a2 2", "4 ok")
	// report has not fired yet: its items are placed just before its first
	// fire, and the page says so rather than "resharding" with none assigned.
	row := tb.waitText("#jobs-table tbody tr:nth-child(2)", "report", "0 0 0 1 1 *", "2/2", "2027-01-01", "no run yet",
		"awaiting first fire", "not yet assigned: placed before its first fire at 2027-01-01 00:00:00")
	for _, stale := range []string{"resharding", "none assigned"} {
		if strings.Contains(row, stale) {
			t.Errorf("the overview shows a job before its first fire as %q: %q", stale, row)
		}
	}
	tb.waitText("#namespace", "/"+cc.ns)
	tb.waitText("#jobs-count", "2 jobs")

	// A server's items are shown as a count with their ids, under a label
	// that says they are the items it holds.
	tb.click(`a.job-link[href="#/job/orders"]`)
	tb.waitText("#job-servers thead", "Items held", "Items running")
	tb.waitText("#job-servers tbody tr:nth-child(1)", "a1", "online", "2 (items 0, 1)")
	tb.waitText("#job-servers tbody tr:nth-child(2)", "a2", "online", "2 (items 2, 3)")
	tb.waitText("#job-items", "ok fire of")
	tb.waitText("#job-cron", "* * * * * *")
	// A new job's first runs may be make-up runs (misfire): the fires its
	// items missed before a reshard placed them are owed since its first.
	if n := cc.ran("orders", job.KindFire) + cc.ran("orders", job.KindMisfire); n < 4 {
		t.Errorf("the page showed results of %d executions", n)
	}

	tb.click(`a[href="#/jobs"]`)
	tb.click(`a.job-link[href="#/job/report"]`)
	head := tb.waitText("#job-head", "awaiting first fire")
	tb.waitText("#job-assignment", "not yet assigned: placed before its first fire at 2027-01-01 00:00:00")
	if strings.Contains(head, "resharding") {
		t.Errorf("the job's page shows a job before its first fire as resharding: %q", head)
	}
	tb.waitText("#job-servers tbody tr:nth-child(1)", "none")
}

// TestConsoleTriggerRunsTheJob: a trigger from the overview runs every
// item of the job once, and the page shows what the server did.
func TestConsoleTriggerRunsTheJob(t *testing.T) {
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, quiet("report", 4))
	tb := newTab(t)
	tb.open(cc.console)
	tb.setToken(consoleToken)
	tb.click(`button[data-action="trigger"][data-job="report"]`)
	tb.waitText("#notice", "Trigger report: done", "report on a1: changed", "report on a2: changed")
	httpWaitFor(t, "the triggered items", func() bool { return cc.ran("report", job.KindTrigger) == 4 })
	// The fire placed the items; the page shows it by its own refresh.
	tb.waitText("#jobs-table", "a1 2 · a2 2")
	if n := cc.ran("report", job.KindFire); n != 0 {
		t.Errorf("%d regular fires of a yearly job", n)
	}
}

// TestConsolePauseShowsUp: a pause from a job's page sets the flag in
// ZooKeeper and the page shows it, after its refresh and after a reload; a
// change made elsewhere shows up on the page by itself.
func TestConsolePauseShowsUp(t *testing.T) {
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, quiet("report", 4))
	tb := newTab(t)
	tb.open(cc.console + "#/job/report")
	tb.setToken(consoleToken)
	tb.click(`#job-servers button[data-action="pause"][data-server="a1"]`)
	tb.waitText("#notice", "Pause a1 (job report): done", "report on a1: changed")
	if s := server(t, cc.jobStatus("report"), "a1"); !s.Paused {
		t.Fatalf("a1 is not paused in ZooKeeper after the page's pause: %+v", s)
	}
	if s := server(t, cc.jobStatus("report"), "a2"); s.Paused {
		t.Fatalf("a2 was paused too: %+v", s)
	}
	tb.waitText("#job-servers", "paused", "Resume")
	tb.run(chromedp.Reload())
	tb.waitText("#job-servers", "paused", "Resume")

	// Paused elsewhere (the API, as the shardjob command would): the page
	// follows without a reload.
	cc.api().want(http.StatusOK, "POST", "/servers/a2/pause?job=report", consoleToken, "")
	tb.waitText(`#job-servers tbody tr:nth-child(2)`, "a2", "paused")

	// And back.
	tb.click(`#job-servers button[data-action="resume"][data-server="a1"]`)
	tb.waitText("#notice", "Resume a1 (job report): done")
	if s := server(t, cc.jobStatus("report"), "a1"); s.Paused {
		t.Fatalf("a1 still paused after the page's resume: %+v", s)
	}
}

// TestConsoleActionWithoutTokenIsRefused: without the token every action
// is refused, the page says so with the server's reason, and nothing
// changes in ZooKeeper. A wrong token is refused the same way.
func TestConsoleActionWithoutTokenIsRefused(t *testing.T) {
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, quiet("report", 4))
	tb := newTab(t)
	tb.open(cc.console + "#/job/report")
	tb.waitText("#token-state", "no token")
	tb.click(`#job-servers button[data-action="pause"][data-server="a1"]`)
	tb.waitText("#notice", "Pause a1 (job report): refused (HTTP 401)", "unauthorized")
	tb.click("#job-trigger")
	tb.waitText("#notice", "Trigger report: refused (HTTP 401)")
	tb.setToken("not-the-token")
	tb.click(`#job-servers button[data-action="disable"][data-server="a2"]`)
	tb.waitText("#notice", "Disable a2 (job report): refused (HTTP 401)")

	st := cc.jobStatus("report")
	for _, s := range st.Servers {
		if s.Paused || s.Disabled || s.TriggerPending {
			t.Errorf("a refused action changed server %s: %+v", s.ID, s)
		}
	}
	for _, id := range []string{"a1", "a2"} {
		for _, flag := range []string{layout.Paused, layout.Disabled, layout.Trigger} {
			p := layout.Job("report").Server(id) + "/" + flag
			if ok, _, err := cc.rc.Exists(context.Background(), p); err != nil || ok {
				t.Errorf("%s exists after refused actions (%v)", p, err)
			}
		}
	}
	if n := cc.ran("report", job.KindTrigger); n != 0 {
		t.Errorf("%d triggered executions after a refused trigger", n)
	}
}

// TestConsoleEditSchedule: an edit of the cron and the item count from a
// job's page is written to the config node and shows; a bad cron is
// refused with the reason, shown, and nothing is written.
func TestConsoleEditSchedule(t *testing.T) {
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, quiet("report", 4))
	tb := newTab(t)
	tb.open(cc.console + "#/job/report")
	tb.setToken(consoleToken)
	tb.waitText("#job-cron", "0 0 0 1 1 *")
	edit := func(cron, count string) {
		t.Helper()
		tb.fill("#edit-cron", cron)
		tb.fill("#edit-count", count)
		tb.click("#edit-save")
	}
	edit("0 30 2 * * *", "6")
	tb.waitText("#notice", "Edit schedule of report: done", `changed: cron "0 30 2 * * *", 6 items`)
	st := cc.jobStatus("report")
	if st.Cron != "0 30 2 * * *" || st.ShardingTotalCount != 6 || len(st.Items) != 6 {
		t.Fatalf("after the edit the job has cron %q, %d items (%d listed)", st.Cron, st.ShardingTotalCount, len(st.Items))
	}
	tb.waitText("#job-cron", "0 30 2 * * *")
	tb.waitText("#job-count", "6")
	// The instances take it: a trigger now runs the six items.
	cc.api().want(http.StatusOK, "POST", "/jobs/report/trigger", consoleToken, "")
	httpWaitFor(t, "six triggered items", func() bool { return cc.ran("report", job.KindTrigger) == 6 })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before, _, err := cc.rc.Get(ctx, layout.Job("report").Config())
	if err != nil {
		t.Fatal(err)
	}
	edit("61 * * * * *", "6")
	tb.waitText("#notice", "Edit schedule of report: refused (HTTP 400)", "cron")
	edit("0 30 2 * * *", "0")
	tb.waitText("#notice", "Edit schedule of report: refused (HTTP 400)", "shardingTotalCount 0")
	after, _, err := cc.rc.Get(ctx, layout.Job("report").Config())
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("a refused edit changed the config node:\n%s\nwas:\n%s", after, before)
	}
}

// TestConsoleInstancesAndDispatcher: the instances page shows the
// instances' health, units and caps; the dispatcher page shows a real
// dispatcher's workers with their caps, running, due and waiting tasks.
func TestConsoleInstancesAndDispatcher(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	started := make(chan dispatch.Task, 10)
	d, err := dispatch.Open(ctx, dispatch.Config{DSN: filepath.Join(t.TempDir(), "dispatch.db"), Logger: testLogger(t),
		OnStart: func(_ context.Context, tk dispatch.Task) error { started <- tk; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Close(cctx); err != nil {
			t.Errorf("close dispatcher: %v", err)
		}
	})
	for _, w := range []dispatch.Worker{{Name: "email", MaxRunning: 2}, {Name: "sms", MaxRunning: 0}} {
		if err := d.PutWorker(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	for w, ids := range map[string][]string{"email": {"e1", "e2", "e3"}, "sms": {"s1", "s2"}} {
		var tasks []dispatch.NewTask
		for _, id := range ids {
			tasks = append(tasks, dispatch.NewTask{ExternalID: id})
		}
		if _, err := d.Assign(ctx, dispatch.Assignment{Worker: w, Start: now.Add(-time.Second), End: now.Add(time.Hour), Tasks: tasks}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the dispatcher started fewer than two tasks")
		}
	}

	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken, Dispatcher: dispatchhttp.New(d)}, consoleSetup{}, quiet("report", 4), quiet("billing", 2))
	// A fire places a job's items (units) on the instances.
	cc.api().want(http.StatusOK, "POST", "/jobs/report/trigger", consoleToken, "")
	cc.api().want(http.StatusOK, "POST", "/jobs/billing/trigger", consoleToken, "")
	tb := newTab(t)
	tb.open(cc.console + "#/instances")
	tb.waitText("#instances-summary", "6 units", "none unplaced", "2 instances")
	tb.waitText("#instances-table tbody tr:nth-child(1)", "a1", "online", "3 / 7")
	tb.waitText("#instances-table tbody tr:nth-child(2)", "a2", "online", "3 / 7")

	tb.click(`#nav a[data-view="dispatcher"]`)
	tb.waitText("#dispatch-global", "2 / 100")
	// email: 2 running at its cap of 2, 1 due; sms: paused, 2 due.
	email := tb.waitText("#dispatch-table tbody tr:nth-child(1)", "email", "2 / 2", "at cap")
	sms := tb.waitText("#dispatch-table tbody tr:nth-child(2)", "sms", "0 / 0", "paused (cap 0)")
	cells := func(sel string) []string {
		var out []string
		tb.run(chromedp.Evaluate(`Array.from(document.querySelectorAll(`+js(sel+" td")+`)).map(td => td.textContent)`, &out))
		return out
	}
	// Worker, running / cap, due, waiting, running, finished, failed, cancelled, late.
	if got := cells("#dispatch-table tbody tr:nth-child(1)"); len(got) != 9 || strings.Join(got[2:], ",") != "1,1,2,0,0,0,0" {
		t.Errorf("email's row: %q (%s)", got, email)
	}
	if got := cells("#dispatch-table tbody tr:nth-child(2)"); len(got) != 9 || strings.Join(got[2:], ",") != "2,2,0,0,0,0,0" {
		t.Errorf("sms's row: %q (%s)", got, sms)
	}
}

// TestConsoleMissingParts: a server without history or dispatcher says so
// plainly on those pages.
func TestConsoleMissingParts(t *testing.T) {
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, quiet("report", 1))
	tb := newTab(t)
	tb.open(cc.console + "#/history")
	tb.waitText("#history-missing", "History is not configured")
	tb.waitText("#history-events", "history is not configured")
	tb.click(`#nav a[data-view="dispatcher"]`)
	tb.waitText("#dispatch-missing", "The dispatcher is not configured")
	tb.waitText("#dispatch-table", "jobhttp.Options.Dispatcher")
}

// TestConsoleProtectReads: with ProtectReads every read needs the token;
// the console's own files do not, and the page asks for the token and
// shows the jobs once it has it.
func TestConsoleProtectReads(t *testing.T) {
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken, ProtectReads: true}, consoleSetup{}, quiet("report", 2))
	api := cc.api()
	for _, p := range []string{"/", "/jobs", "/jobs/report", "/jobs/report/config", "/instances", "/dispatch/workers", "/history"} {
		if body := api.want(http.StatusUnauthorized, "GET", p, "", ""); !strings.Contains(body, "unauthorized") {
			t.Errorf("GET %s without the token: %s", p, body)
		}
		api.want(http.StatusUnauthorized, "GET", p, "wrong", "")
	}
	api.want(http.StatusOK, "GET", "/jobs", consoleToken, "")
	api.want(http.StatusOK, "GET", "/console/", "", "")
	api.want(http.StatusOK, "GET", "/console/app.js", "", "")

	tb := newTab(t)
	tb.open(cc.console)
	tb.waitText("#problem", "refused (HTTP 401)", "Enter the token above")
	if txt := tb.text("#jobs-table"); strings.Contains(txt, "report") {
		t.Errorf("the jobs show without the token: %q", txt)
	}
	tb.setToken(consoleToken)
	tb.waitText("#jobs-table", "report")
	tb.waitText("#namespace", "/"+cc.ns)
	var hidden bool
	tb.run(chromedp.Poll(`document.getElementById("problem").hidden`, &hidden, chromedp.WithPollingInterval(50*time.Millisecond)))

	// Without any token configured, reads are refused outright.
	ro := newConsoleCluster(t, jobhttp.Options{ProtectReads: true}, consoleSetup{}, quiet("report", 1))
	if body := ro.api().want(http.StatusForbidden, "GET", "/jobs", "", ""); !strings.Contains(body, "none is configured") {
		t.Errorf("GET /jobs with ProtectReads and no token configured: %s", body)
	}
}

// TestConsoleCrossSitePostRefused: a POST from another site is refused
// before its token is looked at, whether a page of another origin submits
// a form to the handler or a client sends another site's Origin with the
// right token; nothing changes.
func TestConsoleCrossSitePostRefused(t *testing.T) {
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, quiet("report", 2))
	api := cc.api()
	do := func(header, value string) (int, string) {
		req, err := http.NewRequest("POST", cc.srv.URL+"/shardjob/servers/a1/pause?job=report", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+consoleToken)
		req.Header.Set(header, value)
		resp, err := cc.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct{ Error string }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Error
	}
	for _, h := range [][2]string{{"Origin", "http://evil.example"}, {"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"}} {
		if code, msg := do(h[0], h[1]); code != http.StatusForbidden || !strings.Contains(msg, "cross-origin") {
			t.Errorf("POST with %s: %s: %d %q, want 403 cross-origin", h[0], h[1], code, msg)
		}
	}
	// The handler's own origin is fine.
	if code, msg := do("Origin", cc.srv.URL); code != http.StatusOK {
		t.Errorf("POST with the handler's own Origin: %d %q", code, msg)
	}
	api.want(http.StatusOK, "POST", "/servers/a1/resume?job=report", consoleToken, "")

	// A page of another origin (localhost rather than 127.0.0.1) submits
	// a form to the handler.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><form method="post" action="` + cc.srv.URL + `/shardjob/servers/a1/pause?job=report">` +
			`<input name="x" value="1"><button id="go" type="submit">go</button></form>`))
	}))
	t.Cleanup(evil.Close)
	tb := newTab(t)
	tb.run(chromedp.Navigate(strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)))
	tb.click("#go")
	tb.waitText("body", "cross-origin request refused")
	if s := server(t, cc.jobStatus("report"), "a1"); s.Paused {
		t.Errorf("the cross-site form paused a1: %+v", s)
	}
}

// TestConsoleShowsPause: a job paused until a time in its config shows
// the pause and its note (as text, not markup) on its page.
func TestConsoleShowsPause(t *testing.T) {
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, quiet("report", 2))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	data, st, err := cc.rc.Get(ctx, layout.Job("report").Config())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := job.DecodeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	cfg.PausedUntil = time.Date(2099, 1, 2, 3, 4, 5, 0, time.UTC)
	cfg.PauseNote = "<b>warehouse</b> move"
	doc, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.rc.Set(ctx, layout.Job("report").Config(), doc, st.Version); err != nil {
		t.Fatal(err)
	}
	tb := newTab(t)
	tb.open(cc.console + "#/job/report")
	tb.setToken(consoleToken)
	tb.waitText("#job-paused", "<b>warehouse</b> move")
	if got := cc.jobStatus("report"); got.PauseNote != cfg.PauseNote || got.PausedUntil == nil || !got.PausedUntil.Equal(cfg.PausedUntil) {
		t.Fatalf("status: paused until %v, note %q", got.PausedUntil, got.PauseNote)
	}
}

// TestConsoleShowsAChain: a job that runs after another names its parent
// on the jobs page and, with where the parent stands, on its own page.
func TestConsoleShowsAChain(t *testing.T) {
	digest := quiet("digest", 1)
	digest.After = "report"
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, quiet("report", 2), digest)
	tb := newTab(t)
	tb.open(cc.console + "#/jobs")
	tb.setToken(consoleToken)
	tb.waitText(".job-after", "report")
	tb.open(cc.console + "#/job/digest")
	tb.waitText("#job-after", "report (", "last fire")
	if st := cc.jobStatus("digest"); len(st.Parents) != 1 || st.Parents[0].Name != "report" {
		t.Fatalf("parents %+v", st.Parents)
	}
}

// TestConsoleBackfill: a job's page starts a backfill of a past range,
// shows its progress until every item is through, and refuses a range in
// the future with the server's reason.
func TestConsoleBackfill(t *testing.T) {
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, consoleSetup{}, job.Config{Name: "report", Cron: "* * * * * *", ShardingTotalCount: 4})
	httpWaitFor(t, "the job firing", func() bool { return cc.ran("report", job.KindFire) > 0 })
	tb := newTab(t)
	tb.open(cc.console + "#/job/report")
	tb.setToken(consoleToken)
	tb.waitText("#backfill-state", "no backfill")
	to := time.Now().Add(-5 * time.Second).UTC().Truncate(time.Second)
	tb.fill("#backfill-from", to.Add(-time.Second).Format(time.RFC3339))
	tb.fill("#backfill-to", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	tb.click("#backfill-start")
	tb.waitText("#notice", "Backfill report: refused (HTTP 400)", "is after now")
	tb.fill("#backfill-to", to.Format(time.RFC3339))
	tb.fill("#backfill-rate", "20")
	tb.click("#backfill-start")
	tb.waitText("#notice", "Backfill report: done")
	tb.waitText("#backfill-progress", "through", "8 of 8 runs done, 4 of 4 items through")
	if n := cc.ran("report", job.KindBackfill); n != 8 {
		t.Errorf("%d backfill runs, want 8 (2 fires × 4 items)", n)
	}
}
