package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
)

const hookSecret = "whsec-0123456789abcdef"

func TestVerify(t *testing.T) {
	now := time.Unix(1_780_000_000, 0)
	body := []byte(`{"event":"start","task":{"uuid":"u1","attempt":1}}`)
	good := Sign(hookSecret, now.Unix(), body)
	mac := good[strings.Index(good, "v1=")+3:]
	cases := []struct {
		what   string
		secret string
		header string
		body   []byte
		at     time.Time
		want   error
	}{
		{"as sent", hookSecret, good, body, now, nil},
		{"received 4m59s later", hookSecret, good, body, now.Add(4*time.Minute + 59*time.Second), nil},
		{"sender's clock 1m ahead", hookSecret, good, body, now.Add(-time.Minute), nil},
		{"spaces and another scheme", hookSecret, fmt.Sprintf(" t=%d , v0=abc, v1=%s ", now.Unix(), mac), body, now, nil},
		{"one of two v1 matches", hookSecret, fmt.Sprintf("t=%d,v1=%s,v1=%s", now.Unix(), strings.Repeat("00", 32), mac), body, now, nil},
		{"tampered body", hookSecret, good, []byte(`{"event":"start","task":{"uuid":"u2","attempt":1}}`), now, ErrSignatureMismatch},
		{"wrong secret", "another-secret-0123", good, body, now, ErrSignatureMismatch},
		{"timestamp changed", hookSecret, fmt.Sprintf("t=%d,v1=%s", now.Unix()+1, mac), body, now, ErrSignatureMismatch},
		{"replayed 163s later, 2m tolerance", hookSecret, good, body, now.Add(163 * time.Second), nil},
		{"6m old", hookSecret, good, body, now.Add(6 * time.Minute), ErrSignatureExpired},
		{"6m in the future", hookSecret, good, body, now.Add(-6 * time.Minute), ErrSignatureExpired},
		{"empty header", hookSecret, "", body, now, ErrSignatureMalformed},
		{"old format", hookSecret, "sha256=" + mac, body, now, ErrSignatureMalformed},
		{"no timestamp", hookSecret, "v1=" + mac, body, now, ErrSignatureMalformed},
		{"no signature", hookSecret, fmt.Sprintf("t=%d", now.Unix()), body, now, ErrSignatureMalformed},
		{"two timestamps", hookSecret, fmt.Sprintf("t=%d,t=%d,v1=%s", now.Unix(), now.Unix(), mac), body, now, ErrSignatureMalformed},
		{"negative timestamp", hookSecret, "t=-5,v1=" + mac, body, now, ErrSignatureMalformed},
		{"timestamp not a number", hookSecret, "t=soon,v1=" + mac, body, now, ErrSignatureMalformed},
		{"short signature", hookSecret, fmt.Sprintf("t=%d,v1=abcd", now.Unix()), body, now, ErrSignatureMalformed},
		{"not hex", hookSecret, fmt.Sprintf("t=%d,v1=%s", now.Unix(), strings.Repeat("zz", 32)), body, now, ErrSignatureMalformed},
		{"no key", hookSecret, fmt.Sprintf("t=%d,%s", now.Unix(), mac), body, now, ErrSignatureMalformed},
	}
	for _, c := range cases {
		tol := 5 * time.Minute
		if strings.Contains(c.what, "2m tolerance") {
			tol, c.want = 2*time.Minute, ErrSignatureExpired
		}
		_, err := verifyAt(c.secret, c.header, c.body, tol, c.at)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.what, err)
			}
			continue
		}
		if !errors.Is(err, c.want) || !errors.Is(err, ErrSignature) {
			t.Errorf("%s: err = %v, want %v", c.what, err, c.want)
		}
	}
	if err := Verify(hookSecret, good, body, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero tolerance: err = %v, want ErrInvalid", err)
	}
	if err := Verify("", good, body, time.Minute); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty secret: err = %v, want ErrInvalid", err)
	}
}

func TestReplayGuard(t *testing.T) {
	clock := newFakeClock()
	g, err := NewReplayGuard(5*time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	g.now = clock.Now
	body := []byte(`{"event":"fail"}`)
	first := Sign(hookSecret, clock.Now().Unix(), body)
	if err := g.Verify(hookSecret, first, body); err != nil {
		t.Fatalf("first delivery: %v", err)
	}
	clock.Advance(163 * time.Second)
	if err := g.Verify(hookSecret, first, body); !errors.Is(err, ErrSignatureReplayed) {
		t.Fatalf("replayed 163 s later: err = %v, want ErrSignatureReplayed", err)
	}
	// A header rewritten around the same signature is the same notice.
	v1 := first[strings.Index(first, "v1="):]
	if err := g.Verify(hookSecret, v1+",t="+fmt.Sprint(clock.Now().Add(-163*time.Second).Unix()), body); !errors.Is(err, ErrSignatureReplayed) {
		t.Fatalf("replayed with the header reordered: err = %v, want ErrSignatureReplayed", err)
	}
	if err := g.Verify(hookSecret, first, []byte(`{"event":"start"}`)); !errors.Is(err, ErrSignatureMismatch) {
		t.Fatalf("tampered: err = %v, want ErrSignatureMismatch", err)
	}
	// The same body sent again, signed afresh (a retried delivery), is a new notice.
	second := Sign(hookSecret, clock.Now().Unix(), body)
	if err := g.Verify(hookSecret, second, body); err != nil {
		t.Fatalf("a fresh delivery: %v", err)
	}
	third := Sign(hookSecret, clock.Now().Unix()+1, body)
	if err := g.Verify(hookSecret, third, body); !errors.Is(err, ErrReplayGuardFull) {
		t.Fatalf("over capacity: err = %v, want ErrReplayGuardFull", err)
	}
	if g.Len() != 2 {
		t.Fatalf("the guard remembers %d notices, want 2", g.Len())
	}
	// Past the window the first is refused as expired, and forgotten.
	clock.Advance(5*time.Minute - 162*time.Second)
	if err := g.Verify(hookSecret, first, body); !errors.Is(err, ErrSignatureExpired) {
		t.Fatalf("replayed outside the window: err = %v, want ErrSignatureExpired", err)
	}
	if err := g.Verify(hookSecret, third, body); err != nil {
		t.Fatalf("once the first left the window: %v", err)
	}
	if g.Len() != 2 {
		t.Fatalf("the guard remembers %d notices, want 2 (the first forgotten)", g.Len())
	}
	if _, err := NewReplayGuard(0, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero tolerance: err = %v", err)
	}
}

// Webhook URLs: https to a public address unless the dispatcher is told
// otherwise; a refused one changes nothing.
func TestWebhookURLPolicy(t *testing.T) {
	ctx := testCtx(t)
	strict := open(t, Config{DSN: filepath.Join(t.TempDir(), "strict.db"), Logger: testlog.Logger(t)})
	h, err := NewHandler(strict, HandlerConfig{Token: testToken, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := restClient{t, srv.URL}
	refused := []struct{ url, says string }{
		{"http://hooks.example.com/n", "AllowInsecureWebhooks"},
		{"https://169.254.169.254/latest/meta-data", "link-local"},
		{"https://[fe80::1%25eth0]/n", "link-local"},
		{"https://127.0.0.1:8443/n", "loopback"},
		{"https://[::1]/n", "loopback"},
		{"https://localhost/n", "localhost"},
		{"https://api.LocalHost./n", "localhost"},
		{"https://10.1.2.3/n", "private"},
		{"https://172.16.0.9/n", "private"},
		{"https://192.168.1.1/n", "private"},
		{"https://[fd00:ec2::254]/n", "private"},
		{"https://0.0.0.0/n", "unspecified"},
		{"https://[::]/n", "unspecified"},
		{"https://239.1.2.3/n", "multicast"},
		{"https://100.100.100.200/n", "100.64.0.0/10"},
		{"https://[::ffff:169.254.169.254]/n", "link-local"},
		{"https://user:pw@hooks.example.com/n", "credentials"},
		{"ftp://hooks.example.com/n", "not an absolute http(s) URL"},
	}
	for _, r := range refused {
		err := strict.PutWorker(ctx, Worker{Name: "w", MaxRunning: 1, WebhookURL: r.url, WebhookSecret: hookSecret})
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, ErrWebhookAddress) || !strings.Contains(err.Error(), r.says) {
			t.Errorf("%s: err = %v, want ErrInvalid and ErrWebhookAddress saying %q", r.url, err, r.says)
		}
		code, body := c.do("PUT", "/v1/workers/w", `{"max_running": 1, "webhook_url": "`+r.url+`", "webhook_secret": "`+hookSecret+`"}`, true)
		if code != 400 || !strings.Contains(fmt.Sprint(body["error"]), r.says) {
			t.Errorf("REST %s: %d %v, want 400 saying %q", r.url, code, body, r.says)
		}
	}
	if _, err := strict.Worker(ctx, "w"); !errors.Is(err, ErrUnknownWorker) {
		t.Errorf("a refused worker was stored: %v", err)
	}
	if err := strict.PutWorker(ctx, Worker{Name: "w", MaxRunning: 1, WebhookURL: "https://hooks.example.com/n"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "secret") {
		t.Errorf("a webhook without a secret: err = %v", err)
	}
	for _, ok := range []string{"https://hooks.example.com/n", "https://203.0.113.7:8443/n", "https://[2606:4700::1111]/n"} {
		if err := strict.PutWorker(ctx, Worker{Name: "w", MaxRunning: 1, WebhookURL: ok, WebhookSecret: hookSecret}); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}

	insecure := open(t, Config{DSN: filepath.Join(t.TempDir(), "insecure.db"), AllowInsecureWebhooks: true, Logger: testlog.Logger(t)})
	if err := insecure.PutWorker(ctx, Worker{Name: "w", MaxRunning: 1, WebhookURL: "http://hooks.example.com/n", WebhookSecret: hookSecret}); err != nil {
		t.Errorf("http with AllowInsecureWebhooks: %v", err)
	}
	if err := insecure.PutWorker(ctx, Worker{Name: "w", MaxRunning: 1, WebhookURL: "http://169.254.169.254/", WebhookSecret: hookSecret}); !errors.Is(err, ErrWebhookAddress) {
		t.Errorf("link-local with only AllowInsecureWebhooks: err = %v", err)
	}
	open2 := open(t, Config{DSN: filepath.Join(t.TempDir(), "open.db"), AllowInsecureWebhooks: true, AllowPrivateWebhooks: true, Logger: testlog.Logger(t)})
	for _, u := range []string{"http://169.254.169.254/", "http://127.0.0.1:8080/n", "http://localhost/n"} {
		if err := open2.PutWorker(ctx, Worker{Name: "w", MaxRunning: 1, WebhookURL: u, WebhookSecret: hookSecret}); err != nil {
			t.Errorf("%s with both allowed: %v", u, err)
		}
	}
}

// At delivery the default client refuses an address a name resolves to,
// before sending anything; told otherwise, it delivers.
func TestWebhookDialRefusesResolvedAddress(t *testing.T) {
	var hits atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer hook.Close()
	_, port, err := net.SplitHostPort(hook.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// "localhost" resolves to a loopback address; checkURL is bypassed
	// here to show the dialer's own check.
	url := "http://localhost:" + port + "/n"
	wh := &Webhooks{}
	ctx := testCtx(t)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = wh.client(webhookPolicy{insecure: true}).Do(req)
	if !errors.Is(err, ErrWebhookAddress) {
		t.Fatalf("dialling a name that resolves to loopback: err = %v, want ErrWebhookAddress", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the receiver got %d requests", hits.Load())
	}
	resp, err := wh.client(webhookPolicy{insecure: true, private: true}).Do(req.Clone(ctx))
	if err != nil {
		t.Fatalf("with private addresses allowed: %v", err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Fatalf("the receiver got %d requests, want 1", hits.Load())
	}
}

// A worker stored under a looser policy gets no notice from a dispatcher
// whose policy forbids its URL.
func TestWebhookDeliveryChecksThePolicy(t *testing.T) {
	ctx := testCtx(t)
	loose := open(t, Config{DSN: filepath.Join(t.TempDir(), "d.db"), AllowInsecureWebhooks: true, AllowPrivateWebhooks: true, Logger: testlog.Logger(t)})
	if err := loose.PutWorker(ctx, Worker{Name: "w", MaxRunning: 1, WebhookURL: "http://127.0.0.1:1/n", WebhookSecret: hookSecret}); err != nil {
		t.Fatal(err)
	}
	wh := &Webhooks{Workers: strictWorkers{loose}, Attempts: 1}
	err := wh.Start(ctx, Task{UUID: "u", Worker: "w"})
	if !errors.Is(err, ErrWebhookAddress) {
		t.Fatalf("err = %v, want ErrWebhookAddress", err)
	}
}

// strictWorkers hides the Dispatcher's policy: Webhooks then uses the strict default.
type strictWorkers struct{ d *Dispatcher }

func (s strictWorkers) Worker(ctx context.Context, name string) (Worker, error) {
	return s.d.Worker(ctx, name)
}
