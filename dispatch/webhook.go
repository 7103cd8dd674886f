package dispatch

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
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// SignatureHeader is the header that carries a notice's timestamp and
// signature: "t=<unix seconds>,v1=<hex HMAC-SHA256>" (see Sign).
const SignatureHeader = "X-Shardjob-Signature"

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
// with the header X-Shardjob-Signature: "t=<unix seconds>,v1=<hex>", where
// hex is HMAC-SHA256(secret, "<t>." + body) (see Sign); a receiver checks
// it with Verify, and refuses replays with a ReplayGuard. A notice is
// retried with a doubling delay until a 2xx answer or Attempts tries; each
// try is signed afresh. A start notice that is never accepted fails the
// attempt (the task is retried under its policy); the client then calls
// the finish endpoint when the work is done.
//
// Where notices may go: the URL must be https, and its host must not be
// (or, at delivery, resolve to) a loopback, private, link-local,
// carrier-grade NAT, multicast or unspecified address, unless Workers is
// a Dispatcher whose Config says otherwise (AllowInsecureWebhooks,
// AllowPrivateWebhooks). The default client checks every address it
// dials, follows no redirect and uses no proxy; a Client you supply
// replaces those checks with its own.
//
// When the notice's context carries a span — with Config.TracerProvider
// set, a start notice carries its dispatch's span, a timeout or fail
// notice its own (TimeoutSpanName, FailSpanName) — every try carries that span's W3C trace context in the traceparent (and
// tracestate) header, so that the receiver continues the trace. These
// headers are not covered by the signature.
type Webhooks struct {
	// Workers looks up a task's worker (its URL and secret): the Dispatcher.
	Workers interface {
		Worker(ctx context.Context, name string) (Worker, error)
	}
	// Client sends the POSTs. Default: a client with a 10s timeout whose
	// dialer refuses the addresses above, that follows no redirect and
	// uses no proxy.
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

// Sign returns the X-Shardjob-Signature value for a body sent at ts (Unix
// seconds): "t=<ts>,v1=<hex(HMAC-SHA256(secret, "<ts>." + body))>".
func Sign(secret string, ts int64, body []byte) string {
	return fmt.Sprintf("t=%d,v1=%s", ts, hex.EncodeToString(mac(secret, ts, body)))
}

func mac(secret string, ts int64, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%d.", ts)
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a notice: header is its X-Shardjob-Signature value, body
// the raw request body, tolerance how far its timestamp may be from now,
// in the past or in the future (a few minutes is usual). It returns nil
// for a notice signed with secret within the tolerance, or an error that
// wraps ErrSignature and one of ErrSignatureMalformed (the header cannot
// be read), ErrSignatureMismatch (a wrong secret or a changed body or
// timestamp) and ErrSignatureExpired (outside the tolerance).
//
// Verify alone does not refuse a notice captured and sent again within
// the tolerance: a receiver must remember the notices it accepted during
// the window and refuse them a second time. ReplayGuard does that.
func Verify(secret, header string, body []byte, tolerance time.Duration) error {
	_, err := verifyAt(secret, header, body, tolerance, time.Now())
	return err
}

// verifyAt is Verify at the instant now; it returns the timestamp and the
// signature that matched.
func verifyAt(secret, header string, body []byte, tolerance time.Duration, now time.Time) (sig signed, err error) {
	if tolerance <= 0 {
		return signed{}, fmt.Errorf("%w: tolerance %s must be positive", ErrInvalid, tolerance)
	}
	if secret == "" {
		return signed{}, fmt.Errorf("%w: no secret to verify with", ErrInvalid)
	}
	ts, sigs, err := parseSignature(header)
	if err != nil {
		return signed{}, err
	}
	want := mac(secret, ts, body)
	var match []byte
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			match = s
		}
	}
	if match == nil {
		return signed{}, fmt.Errorf("%w: no v1 signature matches the body and timestamp under this secret", ErrSignatureMismatch)
	}
	at := time.Unix(ts, 0)
	if d := now.Sub(at); d > tolerance || d < -tolerance {
		return signed{}, fmt.Errorf("%w: signed at %s, %s from now, outside the tolerance of %s", ErrSignatureExpired, at.UTC().Format(time.RFC3339), d.Round(time.Second), tolerance)
	}
	return signed{at: at, mac: string(match)}, nil
}

// signed is a verified notice's timestamp and signature.
type signed struct {
	at  time.Time
	mac string
}

// maxSignatureHeader bounds the header Verify reads.
const maxSignatureHeader = 4096

// parseSignature reads "t=<unix>,v1=<hex>[,v1=<hex>...]"; other keys are
// ignored, so a sender may add schemes later.
func parseSignature(header string) (int64, [][]byte, error) {
	if header == "" {
		return 0, nil, fmt.Errorf("%w: the %s header is missing or empty", ErrSignatureMalformed, SignatureHeader)
	}
	if len(header) > maxSignatureHeader {
		return 0, nil, fmt.Errorf("%w: the header is %d bytes, over %d", ErrSignatureMalformed, len(header), maxSignatureHeader)
	}
	var ts int64
	haveTS := false
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" {
			return 0, nil, fmt.Errorf("%w: %q is not key=value", ErrSignatureMalformed, part)
		}
		switch k {
		case "t":
			if haveTS {
				return 0, nil, fmt.Errorf("%w: more than one t=", ErrSignatureMalformed)
			}
			n, err := strconv.ParseUint(v, 10, 40)
			if err != nil || v[0] == '+' {
				return 0, nil, fmt.Errorf("%w: t=%q is not a Unix time in seconds", ErrSignatureMalformed, v)
			}
			ts, haveTS = int64(n), true
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return 0, nil, fmt.Errorf("%w: v1=%q is not %d hex bytes", ErrSignatureMalformed, v, sha256.Size)
			}
			sigs = append(sigs, b)
		}
	}
	if !haveTS {
		return 0, nil, fmt.Errorf("%w: no t= timestamp", ErrSignatureMalformed)
	}
	if len(sigs) == 0 {
		return 0, nil, fmt.Errorf("%w: no v1= signature", ErrSignatureMalformed)
	}
	return ts, sigs, nil
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

// policy is where notices may go: the Dispatcher's, or the strict default.
func (wh *Webhooks) policy() webhookPolicy {
	if p, ok := wh.Workers.(interface{ webhookPolicy() webhookPolicy }); ok {
		return p.webhookPolicy()
	}
	return webhookPolicy{}
}

func (wh *Webhooks) client(p webhookPolicy) *http.Client {
	if wh.Client != nil {
		return wh.Client
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: p.control}
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			Proxy:               nil, // the checked address must be the receiver's
			DialContext:         dialer.DialContext,
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
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
	p := wh.policy()
	// Checked again at each delivery: a worker stored under a looser
	// policy, or a policy tightened since, sends nothing it forbids.
	if err := p.checkURL(w.WebhookURL); err != nil {
		return fmt.Errorf("dispatch: %s notice for worker %q: %w", event, t.Worker, err)
	}
	body, err := json.Marshal(WebhookEvent{Event: event, Task: t.ToJSON()})
	if err != nil {
		return err
	}
	client := wh.client(p)
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
		if errors.Is(last, ErrWebhookAddress) {
			break // a forbidden address stays forbidden
		}
	}
	return fmt.Errorf("dispatch: %s notice to %s failed, last: %w", event, w.WebhookURL, last)
}

func post(ctx context.Context, client *http.Client, w Worker, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(w.WebhookSecret, time.Now().Unix(), body))
	injectTrace(ctx, req.Header)
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
