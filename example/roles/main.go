// Command roles shows tokens with roles and the audit trail: one instance
// running one job on the embedded registry (nothing to install), its
// history and audit trail in SQLite, and the HTTP API and console with the
// tokens of tokens.yaml (a viewer, an operator, an admin).
//
// From the repository root:
//
//	go run ./example/roles          # the walk-through, then the console until Ctrl-C
//	go run ./example/roles -once    # the walk-through only
//
// The walk-through sends three requests and prints the answers: the
// viewer's trigger is refused (403, naming the role needed), the
// operator's runs, and the admin reads the audit trail, which holds both.
// The admin's token is read from SHARDJOB_DEMO_ADMIN_TOKEN (tokens.yaml's
// tokenEnv); when it is unset a random one is made and printed.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
	"github.com/shardjob/shardjob/regcenter/embedded"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

func main() {
	once := flag.Bool("once", false, "run the walk-through and exit")
	listen := flag.String("listen", "127.0.0.1:8089", "where the API and the console listen")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, *listen, *once); err != nil {
		fmt.Fprintln(os.Stderr, "roles:", err)
		os.Exit(1)
	}
}

// tokensFile is tokens.yaml, beside this file.
func tokensFile() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "tokens.yaml")
}

func run(ctx context.Context, out io.Writer, listen string, once bool) (err error) {
	if os.Getenv("SHARDJOB_DEMO_ADMIN_TOKEN") == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		if err := os.Setenv("SHARDJOB_DEMO_ADMIN_TOKEN", hex.EncodeToString(b)); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "shardjob-roles-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	rc, err := embedded.New(ctx, embedded.Config{Dir: filepath.Join(dir, "etcd"), Namespace: "roles-demo"})
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
	sched, err := job.NewScheduler(rc, append([]job.Option{job.WithServerID("demo-1")}, rec.SchedulerOptions()...)...)
	if err != nil {
		return err
	}
	err = sched.Add(ctx, job.Config{Name: "report", Cron: "0 0 3 * * *", ShardingTotalCount: 2},
		job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error { return nil }))
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

	// The handler: its tokens from tokens.yaml, every operation audited.
	h, err := jobhttp.New(rc, jobhttp.Options{TokensFile: tokensFile(), Audit: historyhttp.Audit(rec), History: historyhttp.New(rec)})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
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
	base := "http://" + ln.Addr().String()

	admin := os.Getenv("SHARDJOB_DEMO_ADMIN_TOKEN")
	steps := []struct{ who, method, path, token string }{
		{"the viewer (dashboard) triggers report", "POST", "/jobs/report/trigger", "demo-viewer-token"},
		{"the operator (oncall) triggers report", "POST", "/jobs/report/trigger", "demo-operator-token"},
		{"the admin (alice) reads the audit trail", "GET", "/audit", admin},
	}
	for _, s := range steps {
		code, body, err := send(ctx, s.method, base+s.path, s.token)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %s %s -> %d\n%s\n\n", s.who, s.method, s.path, code, strings.TrimSpace(body))
	}
	if once {
		return nil
	}
	fmt.Fprintf(out, "console: %s/console/ (tokens: demo-viewer-token, demo-operator-token, admin %s)\nCtrl-C to stop\n", base, admin)
	select {
	case <-ctx.Done():
		return nil
	case err := <-served:
		served <- err // the deferred Shutdown reads it
		return err
	}
}

// send sends one request with the token and returns the status and body.
func send(ctx context.Context, method, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
