// Command receiver is a webhook receiver for the dispatcher's notices: it
// checks each notice's signature and timestamp with dispatch.ReplayGuard
// (dispatch.Verify plus a memory of the notices accepted inside the
// window) and refuses a forged, tampered, stale or replayed one with 401.
//
// From the repository root:
//
//	go run ./example/dispatch/receiver             # the demo: a dispatcher sends it three tasks, then a replay and a forgery
//	go run ./example/dispatch/receiver -demo=false -listen :8080 -secret-env WEBHOOK_SECRET
//
// The demo opens a dispatcher on SQLite in a temporary directory, points a
// worker's webhook at this receiver and assigns three tasks; each start
// notice is verified and the task finished, as a real client would after
// its work. It then sends the first notice again, exactly as captured, and
// a copy with a changed body: both are refused. The demo's receiver
// listens on 127.0.0.1 over plain http, which a dispatcher refuses unless
// told (Config.AllowInsecureWebhooks, Config.AllowPrivateWebhooks); a real
// receiver serves https on a public address.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

func main() {
	demo := flag.Bool("demo", true, "run a dispatcher that sends notices here, then a replay and a forgery, and exit")
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	secretEnv := flag.String("secret-env", "WEBHOOK_SECRET", "environment variable holding the worker's webhook secret")
	tolerance := flag.Duration("tolerance", 5*time.Minute, "how far a notice's timestamp may be from now")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	secret := os.Getenv(*secretEnv)
	if secret == "" && *demo {
		secret = "demo-secret-0123456789abcdef"
	}
	if err := run(ctx, *demo, *listen, secret, *tolerance); err != nil {
		fmt.Fprintln(os.Stderr, "receiver:", err)
		os.Exit(1)
	}
}

// notice is one accepted notice, as it came.
type notice struct {
	event  dispatch.WebhookEvent
	header string
	body   []byte
}

// receiver verifies notices and hands the accepted ones on.
type receiver struct {
	secret   string
	guard    *dispatch.ReplayGuard
	accepted chan notice
	log      *slog.Logger
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	header := r.Header.Get(dispatch.SignatureHeader)
	if err := rc.guard.Verify(rc.secret, header, body); err != nil {
		code := http.StatusUnauthorized
		if errors.Is(err, dispatch.ErrReplayGuardFull) {
			code = http.StatusServiceUnavailable // the sender tries again later
		}
		rc.log.Warn("notice refused", "from", r.RemoteAddr, "err", err)
		http.Error(w, err.Error(), code)
		return
	}
	var ev dispatch.WebhookEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "not a notice: "+err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case rc.accepted <- notice{event: ev, header: header, body: body}:
		w.WriteHeader(http.StatusNoContent)
	case <-r.Context().Done():
	}
}

func run(ctx context.Context, demo bool, listen, secret string, tolerance time.Duration) (err error) {
	if secret == "" {
		return errors.New("no secret: set the variable named by -secret-env")
	}
	guard, err := dispatch.NewReplayGuard(tolerance, 0)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rc := &receiver{secret: secret, guard: guard, accepted: make(chan notice, 16), log: log}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, srv.Shutdown(sctx))
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
	}()
	url := "http://" + ln.Addr().String() + "/notices"
	fmt.Println("receiving on", url)
	if !demo {
		for {
			select {
			case <-ctx.Done():
				return nil
			case n := <-rc.accepted:
				fmt.Printf("accepted %s notice for task %s (attempt %d)\n", n.event.Event, n.event.Task.UUID, n.event.Task.Attempt)
			}
		}
	}
	return runDemo(ctx, rc, url, secret, log)
}

func runDemo(ctx context.Context, rc *receiver, url, secret string, log *slog.Logger) (err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "dispatch-receiver-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	wh := &dispatch.Webhooks{Logger: log}
	d, err := dispatch.Open(ctx, dispatch.Config{
		DSN: filepath.Join(dir, "dispatch.db"), OnStart: wh.Start, OnFail: wh.Fail, OnTimeout: wh.Timeout,
		// The demo's receiver is on loopback over plain http.
		AllowInsecureWebhooks: true, AllowPrivateWebhooks: true,
		Logger: log,
	})
	if err != nil {
		return err
	}
	wh.Workers = d
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err = errors.Join(err, d.Close(cctx))
	}()
	if err := d.PutWorker(ctx, dispatch.Worker{Name: "acme", MaxRunning: 2, WebhookURL: url, WebhookSecret: secret}); err != nil {
		return err
	}
	now := time.Now()
	tasks := []dispatch.NewTask{{ExternalID: "r1", Info: []byte("report 1")}, {ExternalID: "r2"}, {ExternalID: "r3"}}
	if _, err := d.Assign(ctx, dispatch.Assignment{Worker: "acme", Start: now, End: now.Add(time.Second), Tasks: tasks}); err != nil {
		return err
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	var first notice
	for i := range tasks {
		var n notice
		select {
		case n = <-rc.accepted:
		case <-ctx.Done():
			return fmt.Errorf("waiting for start notice %d: %w", i+1, ctx.Err())
		}
		if i == 0 {
			first = n
		}
		fmt.Printf("accepted %s notice for %s (attempt %d)\n", n.event.Event, n.event.Task.ExternalID, n.event.Task.Attempt)
		// The work is done: finish this attempt (over REST, a client
		// POSTs /v1/tasks/{uuid}/finish with {"attempt": n}).
		if err := d.FinishAttempt(ctx, n.event.Task.UUID, n.event.Task.Attempt); err != nil {
			return err
		}
	}
	for _, try := range []struct {
		what string
		body []byte
	}{
		{"the first notice sent again", first.body},
		{"the first notice with its body changed", bytes.Replace(first.body, []byte(`"attempt":1`), []byte(`"attempt":2`), 1)},
	} {
		code, answer, err := send(ctx, url, first.header, try.body)
		if err != nil {
			return err
		}
		fmt.Printf("%s: %d %s\n", try.what, code, answer)
		if code != http.StatusUnauthorized {
			return fmt.Errorf("%s was not refused", try.what)
		}
	}
	return nil
}

// send posts a notice as captured, as an attacker on the way would.
func send(ctx context.Context, url, header string, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set(dispatch.SignatureHeader, header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(bytes.TrimSpace(b)), err
}
