package jobfile_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/errhandler"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
)

// A job file's alert: section is the job's Config.Alert, and its webhook
// handler's preset: shapes the body the job's alerts are posted with.
func TestJobFileAlertAndWebhookPreset(t *testing.T) {
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	defer srv.Close()
	f, _ := file(t, "unused", "  - name: a\n    type: http\n    cron: '@hourly'\n    shardingTotalCount: 1\n"+
		"    alert: {late: 30s, notRunFor: 2h}\n"+
		"    http: {url: \""+srv.URL+"/job\", allowPrivateAddresses: true}\n"+
		"    errorHandler: {type: webhook, preset: generic, url: \""+srv.URL+"/hook\", secret: s, allowPrivateAddresses: true}\n")
	if want := (job.AlertPolicy{Late: 30 * time.Second, NotRunFor: 2 * time.Hour}); f.Jobs[0].Config.Alert != want {
		t.Errorf("alert = %+v, want %+v", f.Jobs[0].Config.Alert, want)
	}
	j, err := jobfile.Build(f.Jobs[0], nil, jobfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, ok := j.(job.AlertHandler)
	if !ok {
		t.Fatalf("the built job %T takes no alerts", j)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.HandleAlert(ctx, job.Alert{Kind: job.EventNotRun, Job: "a", Server: "s1", Err: job.ErrNotRun}); err != nil {
		t.Fatal(err)
	}
	var p errhandler.GenericPayload
	if err := json.Unmarshal(<-got, &p); err != nil || p.Job != "a" || p.Kind != "not-run" || p.Fire != "" || p.Instance != "s1" {
		t.Errorf("posted %+v (%v)", p, err)
	}
}

// example/yaml/alerts.yaml (make alerts-demo) loads, with its alert and
// its Slack-style webhook.
func TestAlertsExampleLoads(t *testing.T) {
	f, err := jobfile.LoadFile(filepath.Join("..", "example", "yaml", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := jobfile.Check(f.Jobs); err != nil {
		t.Fatal(err)
	}
	if len(f.Jobs) != 1 || f.Jobs[0].Config.Alert.Late != 3*time.Second {
		t.Fatalf("jobs %+v, want one with a late bound of 3s", f.Jobs)
	}
	if _, err := jobfile.Build(f.Jobs[0], nil, jobfile.Options{}); err != nil {
		t.Fatal(err)
	}
}

// A file's top-level alert: is the namespace default of the jobs it runs;
// bad bounds are refused naming the field.
func TestFileAlertDefault(t *testing.T) {
	f, _ := file(t, "unused", "  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n")
	if !f.Alert.IsZero() {
		t.Errorf("no alert section: %+v", f.Alert)
	}
	head := "regcenter: {servers: [\"127.0.0.1:2181\"], namespace: x}\n"
	jobs := "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n"
	got, err := jobfile.Load(strings.NewReader(head + "alert: {late: 30s, notRunFor: 2h}\n" + jobs))
	if err != nil {
		t.Fatal(err)
	}
	if want := (job.AlertPolicy{Late: 30 * time.Second, NotRunFor: 2 * time.Hour}); got.Alert != want {
		t.Errorf("alert default = %+v, want %+v", got.Alert, want)
	}
	for doc, want := range map[string]string{
		"alert: {late: -1s}\n":   "alert.late at line 2: -1s must not be negative",
		"alert: {late: 500ms}\n": "alert.late 500ms: must be 0 (no alert) or at least 1s",
		"alert: {every: 1m}\n":   "every",
		"alert: 30s\n":           "must be a mapping",
		"alert: {late: soon}\n":  "alert.late",
	} {
		if _, err := jobfile.Load(strings.NewReader(head + doc + jobs)); !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming %q", doc, err, want)
		}
	}
}
