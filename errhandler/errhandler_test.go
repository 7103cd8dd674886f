package errhandler_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/errhandler"
	"github.com/shardjob/shardjob/job"
)

func sc(item int) job.ShardingContext {
	return job.ShardingContext{JobName: "orders", TaskID: "orders@1", Item: item, Kind: job.KindFire, ServerID: "s1", FireTime: time.UnixMilli(1000)}
}

type collect struct {
	mu  sync.Mutex
	got []errhandler.Failure
}

func (c *collect) Handle(_ context.Context, f errhandler.Failure) error {
	c.mu.Lock()
	c.got = append(c.got, f)
	c.mu.Unlock()
	return nil
}

func TestWrapReportsFailuresNotCancellations(t *testing.T) {
	var c collect
	fail := errors.New("boom")
	var result error
	j := errhandler.Wrap(job.SimpleFunc(func(ctx context.Context, _ job.ShardingContext) error { return result }), &c, errhandler.Options{})
	bg := context.Background()

	result = fail
	for range 2 {
		if err := j.Execute(bg, sc(1)); !errors.Is(err, fail) {
			t.Fatal(err)
		}
	}
	result = nil
	if err := j.Execute(bg, sc(1)); err != nil {
		t.Fatal(err)
	}
	result = fail
	if err := j.Execute(bg, sc(1)); !errors.Is(err, fail) {
		t.Fatal(err)
	}
	// Cut short by a shutdown: not a failure.
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	if err := j.Execute(cancelled, sc(1)); !errors.Is(err, fail) {
		t.Fatal(err)
	}
	// Past the job's timeout: a failure, even if the job returned nil.
	result = nil
	timedOut, cancel2 := context.WithTimeoutCause(bg, 0, job.ErrExecutionTimeout)
	defer cancel2()
	if err := j.Execute(timedOut, sc(2)); !errors.Is(err, job.ErrExecutionTimeout) {
		t.Fatalf("timed-out execution returned %v", err)
	}
	want := []int{1, 2, 1, 2}
	if len(c.got) != len(want) {
		t.Fatalf("reports %+v", c.got)
	}
	for i, f := range c.got {
		if f.Consecutive != want[i] || f.Job != "orders" || f.Error == "" {
			t.Errorf("report %d: %+v, want consecutive %d", i, f, want[i])
		}
	}
	if !c.got[3].TimedOut || c.got[3].Item != 2 {
		t.Errorf("timeout report %+v", c.got[3])
	}
}

func TestHandlerErrorJoinsTheExecutionError(t *testing.T) {
	herr := errors.New("pager down")
	j := errhandler.Wrap(job.SimpleFunc(func(context.Context, job.ShardingContext) error { return errors.New("boom") }),
		errhandler.HandlerFunc(func(context.Context, errhandler.Failure) error { return herr }), errhandler.Options{})
	if err := j.Execute(context.Background(), sc(0)); !errors.Is(err, herr) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err %v", err)
	}
}

type pauser struct {
	mu     sync.Mutex
	paused []string
}

func (p *pauser) Pause(_ context.Context, job string) error {
	p.mu.Lock()
	p.paused = append(p.paused, job)
	p.mu.Unlock()
	return nil
}

func TestStopPausesAfterNConsecutiveFailures(t *testing.T) {
	var p pauser
	s, err := errhandler.NewStop(3, &p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var events []errhandler.Failure
	s.OnPause = func(f errhandler.Failure) { events = append(events, f) }
	var c collect
	s.Then = &c
	for i := 1; i <= 3; i++ {
		if err := s.Handle(context.Background(), errhandler.Failure{Job: "orders", Consecutive: i}); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.paused) != 1 || p.paused[0] != "orders" || len(events) != 1 || events[0].Consecutive != 3 || len(c.got) != 3 {
		t.Fatalf("paused %v, events %v, passed on %d", p.paused, events, len(c.got))
	}
	if _, err := errhandler.NewStop(0, &p, nil); !errors.Is(err, errhandler.ErrInvalidConfig) {
		t.Fatalf("NewStop(0): %v", err)
	}
}

func TestWebhookSignsAndRetries(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	var sigs, stamps []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		sigs = append(sigs, r.Header.Get(errhandler.SignatureHeader))
		stamps = append(stamps, r.Header.Get(errhandler.TimestampHeader))
		n := len(bodies)
		mu.Unlock()
		if n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	h, err := errhandler.NewWebhook(errhandler.WebhookConfig{URL: srv.URL, Secret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	f := errhandler.Failure{Job: "orders", Item: 4, Error: "exit 3", Consecutive: 2}
	if err := h.Handle(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 3 {
		t.Fatalf("%d attempts, want 3 (two 503s, then 200)", len(bodies))
	}
	var got errhandler.Failure
	if err := json.Unmarshal(bodies[2], &got); err != nil || got.Job != "orders" || got.Item != 4 || got.Error != "exit 3" {
		t.Fatalf("report %s: %v", bodies[2], err)
	}
	if sigs[2] != errhandler.Sign([]byte("s3cret"), stamps[2], bodies[2]) || sigs[2] == errhandler.Sign([]byte("other"), stamps[2], bodies[2]) {
		t.Fatalf("signature %q does not verify", sigs[2])
	}
}

func TestWebhookGivesUpOnAClientErrorAndWhenBounded(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	status := http.StatusBadRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.WriteHeader(status)
	}))
	defer srv.Close()
	h, err := errhandler.NewWebhook(errhandler.WebhookConfig{URL: srv.URL, Secret: "x", Retries: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Handle(context.Background(), errhandler.Failure{}); !errors.Is(err, errhandler.ErrDelivery) || calls != 1 {
		t.Fatalf("400: err %v after %d calls, want ErrDelivery after 1", err, calls)
	}
	// A receiver that always fails: retries end with the context.
	status = http.StatusBadGateway
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := h.Handle(ctx, errhandler.Failure{}); !errors.Is(err, errhandler.ErrDelivery) {
		t.Fatalf("502: err %v", err)
	}
	for _, c := range []errhandler.WebhookConfig{{}, {URL: "ftp://x", Secret: "x"}, {URL: "http://x"}, {URL: "http://x", Secret: "x", Retries: -2}} {
		if _, err := errhandler.NewWebhook(c); !errors.Is(err, errhandler.ErrInvalidConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// smtpServer is a minimal SMTP server with STARTTLS and AUTH PLAIN: enough
// for net/smtp, and it records what it receives.
type smtpServer struct {
	ln    net.Listener
	cert  tls.Certificate
	pool  *x509.CertPool
	mu    sync.Mutex
	auth  string
	mails []string
	tls   bool
	done  chan struct{}
}

func startSMTP(t *testing.T) *smtpServer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpServer{ln: ln, cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool: pool, done: make(chan struct{})}
	go s.serve() // owned by the test: ends when the listener closes
	t.Cleanup(func() {
		ln.Close()
		<-s.done
	})
	return s
}

func (s *smtpServer) serve() {
	defer close(s.done)
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		s.session(c)
		c.Close()
	}
}

func (s *smtpServer) session(c net.Conn) {
	r := bufio.NewReader(c)
	say := func(line string) { fmt.Fprintf(c, "%s\r\n", line) }
	say("220 127.0.0.1 ESMTP test")
	secure := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
		switch verb {
		case "EHLO", "HELO":
			if secure {
				say("250-127.0.0.1\r\n250 AUTH PLAIN")
			} else {
				say("250-127.0.0.1\r\n250 STARTTLS")
			}
		case "STARTTLS":
			say("220 go ahead")
			tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{s.cert}})
			if err := tc.Handshake(); err != nil {
				return
			}
			c, r, secure = tc, bufio.NewReader(tc), true
			s.mu.Lock()
			s.tls = true
			s.mu.Unlock()
			say = func(line string) { fmt.Fprintf(c, "%s\r\n", line) }
		case "AUTH":
			dec, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(line, "AUTH PLAIN "))
			s.mu.Lock()
			s.auth = string(dec)
			s.mu.Unlock()
			say("235 ok")
		case "MAIL", "RCPT":
			say("250 ok")
		case "DATA":
			say("354 go on")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(l)
			}
			s.mu.Lock()
			s.mails = append(s.mails, b.String())
			s.mu.Unlock()
			say("250 queued")
		case "QUIT":
			say("221 bye")
			return
		default:
			say("502 unknown")
		}
	}
}

func TestEmailOverSTARTTLS(t *testing.T) {
	srv := startSMTP(t)
	h, err := errhandler.NewEmail(errhandler.EmailConfig{Addr: srv.ln.Addr().String(), From: "jobs@example.com",
		To: []string{"ops@example.com"}, Username: "jobs", Password: "pw",
		TLS: &tls.Config{RootCAs: srv.pool, ServerName: "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := errhandler.Failure{Job: "orders", Item: 3, Error: "exit 2\n.hidden line", Consecutive: 1}
	if err := h.Handle(ctx, f); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if !srv.tls || srv.auth != "\x00jobs\x00pw" || len(srv.mails) != 1 {
		t.Fatalf("tls %v, auth %q, %d mails", srv.tls, srv.auth, len(srv.mails))
	}
	m := srv.mails[0]
	if !strings.Contains(m, "Subject: [shardjob] job orders item 3 failed") || !strings.Contains(m, "exit 2") || !strings.Contains(m, "..hidden line") {
		t.Fatalf("mail:\n%s", m)
	}
}

func TestEmailRefusesAServerWithoutSTARTTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // owned here: one session, then ends
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		fmt.Fprint(c, "220 plain\r\n")
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if strings.HasPrefix(line, "EHLO") {
				fmt.Fprint(c, "250 127.0.0.1\r\n")
			} else {
				fmt.Fprint(c, "221 bye\r\n")
				return
			}
		}
	}()
	defer func() { ln.Close(); <-done }()
	h, err := errhandler.NewEmail(errhandler.EmailConfig{Addr: ln.Addr().String(), From: "a@b.c", To: []string{"d@e.f"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.Handle(ctx, errhandler.Failure{Job: "x"}); !errors.Is(err, errhandler.ErrDelivery) || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("err %v, want a refusal naming STARTTLS", err)
	}
}

func TestRegister(t *testing.T) {
	h := errhandler.HandlerFunc(func(context.Context, errhandler.Failure) error { return nil })
	if err := errhandler.Register("pager-test", h); err != nil {
		t.Fatal(err)
	}
	if err := errhandler.Register("pager-test", h); !errors.Is(err, errhandler.ErrDuplicate) {
		t.Fatal(err)
	}
	if err := errhandler.Register("log", h); !errors.Is(err, errhandler.ErrDuplicate) {
		t.Fatal(err)
	}
	if _, err := errhandler.Lookup("pager-test"); err != nil {
		t.Fatal(err)
	}
	if _, err := errhandler.Lookup("nope"); !errors.Is(err, errhandler.ErrUnknownHandler) {
		t.Fatal(err)
	}
}

func ExampleWrap() {
	failing := job.SimpleFunc(func(context.Context, job.ShardingContext) error { return errors.New("disk full") })
	report := errhandler.HandlerFunc(func(_ context.Context, f errhandler.Failure) error {
		fmt.Printf("job %s item %d failed (%d in a row): %s\n", f.Job, f.Item, f.Consecutive, f.Error)
		return nil
	})
	j := errhandler.Wrap(failing, report, errhandler.Options{})
	for range 2 {
		_ = j.Execute(context.Background(), job.ShardingContext{JobName: "backup", Item: 0})
	}
	// Output:
	// job backup item 0 failed (1 in a row): disk full
	// job backup item 0 failed (2 in a row): disk full
}

// A scheduler pauser without a scheduler says so instead of panicking.
func TestSchedulerPauserWithoutAScheduler(t *testing.T) {
	err := errhandler.SchedulerPauser(nil).Pause(context.Background(), "orders")
	if !errors.Is(err, errhandler.ErrInvalidConfig) || !strings.Contains(err.Error(), "no scheduler") {
		t.Fatalf("Pause through a nil scheduler: %v", err)
	}
}
