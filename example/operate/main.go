// Command operate walks through what an operator does beyond the
// schedule, on the embedded registry (nothing to install), in about half
// a minute: one instance, its history and audit trail in SQLite, the HTTP
// API with the tokens of tokens.yaml.
//
//  1. A retry with backoff: job "import" fails the first two attempts of
//     its first fire and succeeds on the third, each after a doubling wait.
//  2. A late-run alert: job "report" runs longer than its alert.late bound;
//     the alert is posted, as Slack takes it, to a webhook receiver in this
//     process, which prints it.
//  3. A backfill with progress: the operator's token starts a backfill of
//     "import" over ten past seconds through the HTTP API, and its progress
//     is printed until every item is through.
//  4. A viewer's token is refused an operation (403, naming the role).
//  5. The admin reads the audit trail: the backfill and the refusal.
//
// From the repository root: make demo-operate (go run ./example/operate).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/errhandler"
	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter/embedded"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "operate:", err)
		os.Exit(1)
	}
}

// tokensFile is tokens.yaml, beside this file.
func tokensFile() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "tokens.yaml")
}

// attempts prints every attempt of job import's first fire, and closes
// done once every item of it succeeded.
type attempts struct {
	out   io.Writer
	items int
	mu    sync.Mutex
	fire  time.Time
	last  map[int]time.Time // an item's previous attempt's end
	ok    int               // the items that succeeded
	done  chan struct{}
}

// BeforeExecution: nothing to say before an attempt.
func (a *attempts) BeforeExecution(listener.Execution) {}

// AfterExecution prints an attempt of import's first fire.
func (a *attempts) AfterExecution(e listener.Execution) {
	if e.Job != "import" || e.Kind != string(job.KindFire) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fire.IsZero() {
		a.fire = e.FireTime
	}
	if !e.FireTime.Equal(a.fire) || a.done == nil {
		return
	}
	wait := ""
	if last, ok := a.last[e.Item]; ok {
		wait = fmt.Sprintf(" (after a wait of %v)", e.Begin.Sub(last).Round(100*time.Millisecond))
	}
	a.last[e.Item] = e.End
	result := "ok"
	if e.Err != nil {
		result = "failed: " + e.Err.Error()
	}
	fmt.Fprintf(a.out, "  import item %d fire %s attempt %d%s: %s\n", e.Item, e.FireTime.Format(time.TimeOnly), e.Attempt, wait, result)
	if e.Err == nil {
		if a.ok++; a.ok == a.items {
			close(a.done)
			a.done = nil
		}
	}
}

// lockedWriter is a writer the walk-through and the listener share.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func run(ctx context.Context, w io.Writer) (err error) {
	out := &lockedWriter{w: w}
	dir, err := os.MkdirTemp("", "shardjob-operate-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	// The webhook receiver: it prints the first alert it gets.
	alerted := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
		select {
		case alerted <- string(b):
		default:
		}
	}))
	defer receiver.Close()

	rc, err := embedded.New(ctx, embedded.Config{Dir: filepath.Join(dir, "etcd"), Namespace: "operate-demo"})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rc.Close()) }()
	rec, err := history.Open(ctx, history.Config{DSN: filepath.Join(dir, "history.db")})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, rec.Close(cctx))
	}()
	retried := make(chan struct{}) // closed by the listener, which owns tries.done
	tries := &attempts{out: out, items: 2, last: map[int]time.Time{}, done: retried}
	// The walk-through prints what it shows; the scheduler's own log
	// keeps to errors.
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	opts := append([]job.Option{job.WithServerID("demo-1"), job.WithListener(tries), job.WithLogger(quiet)}, rec.SchedulerOptions()...)
	sched, err := job.NewScheduler(rc, opts...)
	if err != nil {
		return err
	}
	// import fails twice on the first fire of each item, then succeeds.
	var mu sync.Mutex
	failed := map[int]int{}
	err = sched.Add(ctx, job.Config{Name: "import", Cron: "*/2 * * * * *", ShardingTotalCount: 2,
		Retry: job.RetryPolicy{Attempts: 2, Backoff: 200 * time.Millisecond}},
		job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
			if sc.Kind != job.KindFire {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if failed[sc.Item] < 2 {
				failed[sc.Item]++
				return fmt.Errorf("the source is not ready yet")
			}
			return nil
		}))
	if err != nil {
		return err
	}
	hook, err := errhandler.NewWebhook(errhandler.WebhookConfig{URL: receiver.URL + "/alerts", Preset: errhandler.PresetSlack,
		Client: receiver.Client()})
	if err != nil {
		return err
	}
	slow := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
		}
		return nil
	})
	err = sched.Add(ctx, job.Config{Name: "report", Cron: "*/3 * * * * *", ShardingTotalCount: 1,
		Alert: job.AlertPolicy{Late: time.Second}}, errhandler.Wrap(slow, hook, errhandler.Options{}))
	if err != nil {
		return err
	}
	if err := sched.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err = errors.Join(err, sched.Shutdown(sctx))
	}()

	h, err := jobhttp.New(rc, jobhttp.Options{TokensFile: tokensFile(), Audit: historyhttp.Audit(rec), Logger: quiet})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }() // owned here: Shutdown below ends it
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, srv.Shutdown(sctx))
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
	}()
	api := "http://" + ln.Addr().String()

	fmt.Fprintln(out, "1. a retry with backoff (import: retry {attempts: 2, backoff: 200ms})")
	if err := wait(ctx, retried); err != nil {
		return err
	}

	fmt.Fprintln(out, "\n2. a late-run alert (report runs 2 s, alert {late: 1s}), posted to the webhook receiver")
	select {
	case body := <-alerted:
		fmt.Fprintf(out, "  the receiver got POST /alerts %s\n", strings.TrimSpace(body))
	case <-ctx.Done():
		return ctx.Err()
	}

	fmt.Fprintln(out, "\n3. a backfill of import's fires of the last twenty seconds (before it existed too), with the operator's token")
	to := time.Now().Add(-time.Second).Truncate(time.Second)
	from := to.Add(-20 * time.Second)
	body := fmt.Sprintf(`{"from": %q, "to": %q, "rate": 5}`, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	code, text, err := send(ctx, "POST", api+"/jobs/import/backfill", "demo-operator-token", body)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  POST /jobs/import/backfill %s -> %d\n", body, code)
	if code != http.StatusOK {
		return fmt.Errorf("the backfill was refused: %s", text)
	}
	for last := ""; ; {
		_, text, err := send(ctx, "GET", api+"/jobs/import/backfill", "demo-viewer-token", "")
		if err != nil {
			return err
		}
		var st struct {
			State                       string
			Fires, Items, Done, Through int
		}
		if err := json.Unmarshal([]byte(text), &st); err != nil {
			return fmt.Errorf("GET /jobs/import/backfill: %w: %s", err, text)
		}
		if line := fmt.Sprintf("  %s: %d of %d runs done", st.State, st.Done, st.Fires*st.Items); line != last {
			fmt.Fprintln(out, line)
			last = line
		}
		if st.State == "through" {
			break
		}
		if err := wait(ctx, time.After(250*time.Millisecond)); err != nil {
			return err
		}
	}

	fmt.Fprintln(out, "\n4. the viewer's token is refused an operation")
	code, text, err = send(ctx, "POST", api+"/jobs/import/trigger", "demo-viewer-token", "")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  POST /jobs/import/trigger -> %d %s\n", code, strings.TrimSpace(text))

	fmt.Fprintln(out, "\n5. the audit trail, read with the admin's token")
	code, text, err = send(ctx, "GET", api+"/audit", "demo-admin-token", "")
	if err != nil {
		return err
	}
	var page struct {
		Entries []struct{ Who, Op, Job, Result, Via string }
	}
	if err := json.Unmarshal([]byte(text), &page); err != nil || code != http.StatusOK {
		return fmt.Errorf("GET /audit -> %d: %v: %s", code, err, text)
	}
	for _, e := range page.Entries {
		fmt.Fprintf(out, "  %s %s %s via %s: %s\n", e.Who, e.Op, e.Job, e.Via, e.Result)
	}
	return nil
}

// wait waits for ch, or fails when ctx ends.
func wait[T any](ctx context.Context, ch <-chan T) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the walk-through did not finish in time: %w", ctx.Err())
	}
}

// send sends one request with the token and returns the status and body.
func send(ctx context.Context, method, url, token, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
