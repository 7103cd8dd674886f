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

// Webhook POSTs each failure as JSON (the fields of Failure) to URL,
// signed with Secret (see SignatureHeader). A delivery that fails — a
// network error, 5xx or 429 — is retried up to Retries times with a
// doubling pause from 200 ms; each attempt is bounded by Timeout and all
// of them by the handler's context. Create it with NewWebhook.
type Webhook struct {
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
}

// NewWebhook validates c and returns its handler.
func NewWebhook(c WebhookConfig) (*Webhook, error) {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return nil, fmt.Errorf("%w: webhook: url is required", ErrInvalidConfig)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fmt.Errorf("%w: webhook: url %q must be an absolute http or https URL", ErrInvalidConfig, c.URL)
	case c.Secret == "":
		return nil, fmt.Errorf("%w: webhook: secret is required to sign reports", ErrInvalidConfig)
	case c.Retries < -1:
		return nil, fmt.Errorf("%w: webhook: retries %d must be -1 (none), 0 (the default %d) or more", ErrInvalidConfig, c.Retries, DefaultWebhookRetries)
	case c.Timeout < 0:
		return nil, fmt.Errorf("%w: webhook: timeout %v must not be negative", ErrInvalidConfig, c.Timeout)
	}
	w := &Webhook{url: c.URL, secret: []byte(c.Secret), retries: c.Retries, timeout: c.Timeout, client: c.Client}
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
	body, err := json.Marshal(f)
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
