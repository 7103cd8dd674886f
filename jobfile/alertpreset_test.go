package jobfile_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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
