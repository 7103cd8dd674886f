package errhandler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/errhandler"
	"github.com/shardjob/shardjob/job"
)

// TestWebhookPresets posts a late fire's alert, and a failed execution,
// through each preset and reads what the receiver got.
func TestWebhookPresets(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	fire := time.Date(2030, 1, 1, 0, 1, 0, 0, time.UTC)
	alert := job.Alert{Kind: job.EventFireLate, Job: "orders", Fire: fire, Bound: 30 * time.Second, Server: "s1",
		Err: fmt.Errorf("%w: fire <late> & slow", job.ErrFireLate), At: fire.Add(30 * time.Second)}
	failed := errhandler.Failure{Job: "orders", Item: 3, ServerID: "s2", FireTime: fire, Error: "exit 3", Consecutive: 2}

	post := func(preset string) (alertBody, failedBody string) {
		t.Helper()
		w, err := errhandler.NewWebhook(errhandler.WebhookConfig{URL: srv.URL, Secret: "s", Preset: preset})
		if err != nil {
			t.Fatal(err)
		}
		// An alert reaches the handler of a wrapped job.
		wrapped := errhandler.Wrap(job.SimpleFunc(func(context.Context, job.ShardingContext) error { return nil }), w, errhandler.Options{})
		if err := wrapped.(job.AlertHandler).HandleAlert(context.Background(), alert); err != nil {
			t.Fatal(err)
		}
		if err := w.Handle(context.Background(), failed); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		n := len(bodies)
		return bodies[n-2], bodies[n-1]
	}

	a, f := post(errhandler.PresetSlack)
	var slack map[string]string
	if err := json.Unmarshal([]byte(a), &slack); err != nil || len(slack) != 1 ||
		slack["text"] != "shardjob: job orders: fire 2030-01-01T00:01:00Z is late (on s1): job: fire late: fire &lt;late&gt; &amp; slow" {
		t.Errorf("slack alert body %s (%v)", a, err)
	}
	if err := json.Unmarshal([]byte(f), &slack); err != nil || !strings.Contains(slack["text"], "job orders item 3 failed") {
		t.Errorf("slack failure body %s (%v)", f, err)
	}

	a, f = post(errhandler.PresetGeneric)
	var g errhandler.GenericPayload
	if err := json.Unmarshal([]byte(a), &g); err != nil || g != (errhandler.GenericPayload{Job: "orders", Kind: "fire-late",
		Fire: "2030-01-01T00:01:00Z", Item: -1, Error: "job: fire late: fire <late> & slow", Instance: "s1"}) {
		t.Errorf("generic alert body %s (%v)", a, err)
	}
	if err := json.Unmarshal([]byte(f), &g); err != nil || g.Kind != "failed" || g.Item != 3 || g.Instance != "s2" || g.Error != "exit 3" {
		t.Errorf("generic failure body %s (%v)", f, err)
	}

	a, _ = post("")
	var plain errhandler.Failure
	if err := json.Unmarshal([]byte(a), &plain); err != nil || plain.Alert != job.EventFireLate || plain.Item != -1 || !plain.FireTime.Equal(fire) {
		t.Errorf("default alert body %s (%v)", a, err)
	}
}

// TestWebhookPresetSettings: an unknown preset is refused, and a slack
// webhook needs no secret (its URL is one) where the others do.
func TestWebhookPresetSettings(t *testing.T) {
	if _, err := errhandler.NewWebhook(errhandler.WebhookConfig{URL: "https://x", Secret: "s", Preset: "teams"}); !errors.Is(err, errhandler.ErrInvalidConfig) || !strings.Contains(err.Error(), `preset "teams"`) {
		t.Errorf("unknown preset: %v", err)
	}
	if _, err := errhandler.NewWebhook(errhandler.WebhookConfig{URL: "https://hooks.slack.com/services/x", Preset: errhandler.PresetSlack}); err != nil {
		t.Errorf("slack without a secret: %v", err)
	}
	if _, err := errhandler.NewWebhook(errhandler.WebhookConfig{URL: "https://x", Preset: errhandler.PresetGeneric}); !errors.Is(err, errhandler.ErrInvalidConfig) {
		t.Errorf("generic without a secret: %v", err)
	}
}
