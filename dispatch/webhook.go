package dispatch

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// Webhooks delivers start, timeout and fail notices to a worker's
// WebhookURL, for clients not written in Go. Use its methods as the
// dispatcher's listeners:
//
//	wh := &dispatch.Webhooks{}
//	cfg.OnStart, cfg.OnTimeout, cfg.OnFail = wh.Start, wh.Timeout, wh.Fail
//	d, err := dispatch.Open(ctx, cfg)
//	wh.Workers = d
//
// Each notice is a POST of {"event": "start"|"timeout"|"fail", "task": {...}}
// with the headers X-Shardjob-Timestamp (Unix seconds) and
// X-Shardjob-Signature: "sha256=" + hex(HMAC-SHA256(secret, timestamp + "." + body)).
// A notice is retried with a doubling delay until a 2xx answer or
// Attempts tries. A start notice that is never accepted fails the attempt
// (the task is retried under its policy); the client then calls the
// finish endpoint when the work is done.
type Webhooks struct {
	// Workers looks up a task's worker (its URL and secret): the Dispatcher.
	Workers interface {
		Worker(ctx context.Context, name string) (Worker, error)
	}
	// Client sends the POSTs. Default: an http.Client with a 10s timeout.
	Client *http.Client
	// Attempts is the most tries per notice. Default 3.
	Attempts int
	// Delay is the wait before the second try, doubled for each next. Default 200ms.
	Delay time.Duration
	// Logger receives delivery failures. Default slog.Default().
	Logger *slog.Logger
}

// WebhookEvent is the body of a notice.
type WebhookEvent struct {
	Event string   `json:"event"`
	Task  TaskJSON `json:"task"`
}

// Sign returns the X-Shardjob-Signature value for a body sent at ts.
func Sign(secret string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%d.", ts)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Start delivers a start notice; use it as Config.OnStart.
func (wh *Webhooks) Start(ctx context.Context, t Task) error {
	return wh.deliver(ctx, "start", t)
}

// Timeout delivers a timeout notice; use it as Config.OnTimeout.
func (wh *Webhooks) Timeout(ctx context.Context, t Task) {
	if err := wh.deliver(ctx, "timeout", t); err != nil {
		wh.logger().Warn("dispatch: timeout notice not delivered", "task", t.UUID, "worker", t.Worker, "err", err)
	}
}

// Fail delivers a fail notice; use it as Config.OnFail.
func (wh *Webhooks) Fail(ctx context.Context, t Task) {
	if err := wh.deliver(ctx, "fail", t); err != nil {
		wh.logger().Warn("dispatch: fail notice not delivered", "task", t.UUID, "worker", t.Worker, "err", err)
	}
}

func (wh *Webhooks) logger() *slog.Logger {
	if wh.Logger != nil {
		return wh.Logger
	}
	return slog.Default()
}

func (wh *Webhooks) deliver(ctx context.Context, event string, t Task) error {
	if wh.Workers == nil {
		return fmt.Errorf("dispatch: webhooks: no Workers set")
	}
	w, err := wh.Workers.Worker(ctx, t.Worker)
	if err != nil {
		return err
	}
	if w.WebhookURL == "" {
		return fmt.Errorf("dispatch: worker %q has no webhook URL for its %s notice", t.Worker, event)
	}
	body, err := json.Marshal(WebhookEvent{Event: event, Task: t.ToJSON()})
	if err != nil {
		return err
	}
	client := wh.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	attempts, delay := wh.Attempts, wh.Delay
	if attempts <= 0 {
		attempts = 3
	}
	if delay <= 0 {
		delay = 200 * time.Millisecond
	}
	var last error
	for i := range attempts {
		if i > 0 {
			timer := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				timer.Stop()
				return fmt.Errorf("dispatch: %s notice to %s: %w (last: %v)", event, w.WebhookURL, ctx.Err(), last)
			case <-timer.C:
			}
			delay *= 2
		}
		if last = post(ctx, client, w, body); last == nil {
			return nil
		}
	}
	return fmt.Errorf("dispatch: %s notice to %s failed %d times, last: %w", event, w.WebhookURL, attempts, last)
}

func post(ctx context.Context, client *http.Client, w Worker, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Shardjob-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("X-Shardjob-Signature", Sign(w.WebhookSecret, ts, body))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)); err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}
