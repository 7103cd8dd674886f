package errhandler

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/shardjob/shardjob/job"
)

// Webhook headers.
const (
	// SignatureHeader carries "sha256=" and the hex HMAC-SHA256 of
	// the timestamp, a '.', and the body, keyed with the secret.
	SignatureHeader = "Shardjob-Signature"
	// TimestampHeader carries the Unix time of the report, in seconds;
	// receivers should refuse old ones (replays).
	TimestampHeader = "Shardjob-Timestamp"
)

// Webhook defaults.
const (
	// DefaultWebhookRetries is WebhookConfig.Retries when it is 0.
	DefaultWebhookRetries = 3
	// DefaultWebhookTimeout is WebhookConfig.Timeout when it is 0.
	DefaultWebhookTimeout = 10 * time.Second
)

// Webhook POSTs each failure as JSON to URL — the fields of Failure, or
// the body of a preset (WebhookConfig.Preset: PresetSlack, PresetGeneric)
// — signed with Secret (see SignatureHeader). A delivery that fails — a
// network error, 5xx or 429 — is retried up to Retries times with a
// doubling pause from 200 ms; each attempt is bounded by Timeout and all
// of them by the handler's context. Create it with NewWebhook.
type Webhook struct {
	preset  string
	url     string
	secret  []byte
	retries int
	timeout time.Duration
	client  *http.Client
}

// WebhookConfig configures a Webhook.
type WebhookConfig struct {
	// URL is the http or https endpoint. Required.
	URL string
	// Secret keys the signature. Required: an unsigned report could be
	// forged by anyone who can reach the receiver.
	Secret string
	// Retries after the first attempt; 0 means DefaultWebhookRetries, -1
	// none.
	Retries int
	// Timeout bounds each attempt; 0 means DefaultWebhookTimeout.
	Timeout time.Duration
	// Client sends the requests; nil means a client of its own.
	Client *http.Client
	// Preset is the body's shape: "" (the default: the fields of
	// Failure), PresetSlack or PresetGeneric.
	Preset string
}

// Webhook payload presets (WebhookConfig.Preset).
const (
	// PresetSlack posts {"text": "..."}, one line saying what failed or
	// alerted, the shape Slack's incoming webhooks take (and the chat
	// services that copy them: Mattermost, Rocket.Chat, Discord's /slack
	// endpoint). Secret is optional with it: such a URL is its own secret.
	PresetSlack = "slack"
	// PresetGeneric posts a GenericPayload.
	PresetGeneric = "generic"
)

// GenericPayload is PresetGeneric's body: one flat JSON object.
type GenericPayload struct {
	// Job is the job's name.
	Job string `json:"job"`
	// Kind is "failed" for a failed execution, else the alert's kind
	// ("fire-late", "not-run").
	Kind string `json:"kind"`
	// Fire is the fire concerned (RFC 3339), "" when none (a job that never
	// ran).
	Fire string `json:"fire"`
	// Item is the failed item, -1 for an alert.
	Item int `json:"item"`
	// Error says what happened.
	Error string `json:"error"`
	// Instance is the server id of the instance reporting.
	Instance string `json:"instance"`
}

// Body returns the body a Webhook with preset posts for f.
func Body(preset string, f Failure) ([]byte, error) {
	switch preset {
	case "":
		return json.Marshal(f)
	case PresetGeneric:
		return json.Marshal(genericOf(f))
	case PresetSlack:
		return json.Marshal(struct {
			Text string `json:"text"`
		}{slackText(f)})
	}
	return nil, fmt.Errorf("%w: webhook: unknown preset %q (want %q or %q)", ErrInvalidConfig, preset, PresetSlack, PresetGeneric)
}

func genericOf(f Failure) GenericPayload {
	g := GenericPayload{Job: f.Job, Kind: "failed", Item: f.Item, Error: f.Error, Instance: f.ServerID}
	if f.IsAlert() {
		g.Kind = string(f.Alert)
	}
	if !f.FireTime.IsZero() {
		g.Fire = f.FireTime.UTC().Format(time.RFC3339Nano)
	}
	return g
}

// slackText is one line of mrkdwn-free text: Slack escapes nothing else
// that matters in plain text but &, < and >.
func slackText(f Failure) string {
	esc := func(s string) string {
		r := make([]rune, 0, len(s))
		for _, c := range s {
			switch c {
			case '&':
				r = append(r, []rune("&amp;")...)
			case '<':
				r = append(r, []rune("&lt;")...)
			case '>':
				r = append(r, []rune("&gt;")...)
			default:
				r = append(r, c)
			}
		}
		return string(r)
	}
	fire := "never"
	if !f.FireTime.IsZero() {
		fire = f.FireTime.UTC().Format(time.RFC3339)
	}
	switch f.Alert {
	case job.EventFireLate:
		return esc(fmt.Sprintf("shardjob: job %s: fire %s is late (on %s): %s", f.Job, fire, f.ServerID, f.Error))
	case job.EventNotRun:
		return esc(fmt.Sprintf("shardjob: job %s has not run (last success: %s; noticed by %s): %s", f.Job, fire, f.ServerID, f.Error))
	case "":
		return esc(fmt.Sprintf("shardjob: job %s item %d failed (fire %s, on %s, %d in a row): %s", f.Job, f.Item, fire, f.ServerID, f.Consecutive, f.Error))
	}
	return esc(fmt.Sprintf("shardjob: job %s alert %s (on %s): %s", f.Job, f.Alert, f.ServerID, f.Error))
}

// NewWebhook validates c and returns its handler.
func NewWebhook(c WebhookConfig) (*Webhook, error) {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return nil, fmt.Errorf("%w: webhook: url is required", ErrInvalidConfig)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fmt.Errorf("%w: webhook: url %q must be an absolute http or https URL", ErrInvalidConfig, c.URL)
	case c.Preset != "" && c.Preset != PresetSlack && c.Preset != PresetGeneric:
		return nil, fmt.Errorf("%w: webhook: preset %q must be %q or %q (or empty for the Failure's fields)", ErrInvalidConfig, c.Preset, PresetSlack, PresetGeneric)
	case c.Secret == "" && c.Preset != PresetSlack:
		return nil, fmt.Errorf("%w: webhook: secret is required to sign reports", ErrInvalidConfig)
	case c.Retries < -1:
		return nil, fmt.Errorf("%w: webhook: retries %d must be -1 (none), 0 (the default %d) or more", ErrInvalidConfig, c.Retries, DefaultWebhookRetries)
	case c.Timeout < 0:
		return nil, fmt.Errorf("%w: webhook: timeout %v must not be negative", ErrInvalidConfig, c.Timeout)
	}
	w := &Webhook{preset: c.Preset, url: c.URL, secret: []byte(c.Secret), retries: c.Retries, timeout: c.Timeout, client: c.Client}
	switch w.retries {
	case 0:
		w.retries = DefaultWebhookRetries
	case -1:
		w.retries = 0
	}
	if w.timeout == 0 {
		w.timeout = DefaultWebhookTimeout
	}
	if w.client == nil {
		w.client = &http.Client{}
	}
	return w, nil
}

// Sign returns the SignatureHeader value for body sent at ts.
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Handle delivers f.
func (w *Webhook) Handle(ctx context.Context, f Failure) error {
	body, err := Body(w.preset, f)
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sig := Sign(w.secret, ts, body)
	pause := 200 * time.Millisecond
	var errs []error
	for attempt := 0; ; attempt++ {
		retry, err := w.post(ctx, body, ts, sig)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("attempt %d: %w", attempt+1, err))
		if !retry || attempt >= w.retries {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			errs = append(errs, context.Cause(ctx))
			return fmt.Errorf("%w: webhook %s: %w", ErrDelivery, w.url, errors.Join(errs...))
		case <-t.C:
		}
		pause = min(2*pause, 5*time.Second)
	}
	return fmt.Errorf("%w: webhook %s: %w", ErrDelivery, w.url, errors.Join(errs...))
}

// post makes one attempt; retry says whether another may succeed.
func (w *Webhook) post(ctx context.Context, body []byte, ts, sig string) (retry bool, err error) {
	actx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(TimestampHeader, ts)
	req.Header.Set(SignatureHeader, sig)
	resp, err := w.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, err
	}
	_, derr := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	cerr := resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return false, errors.Join(derr, cerr)
	}
	return resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests, fmt.Errorf("status %s", resp.Status)
}
