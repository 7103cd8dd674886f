package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/internal/startstop"
)

const dispatchHelp = `shardjob dispatch serve runs a dispatcher node with its REST API.

Usage:
  shardjob dispatch serve [--driver sqlite|postgres] [--dsn DSN] [--listen ADDR]

Flags:
  --driver sqlite|postgres   the store (default sqlite)            env SHARDJOB_DISPATCH_DRIVER
  --dsn DSN                  a file for sqlite (default dispatch.db), a connection string for postgres
                                                                   env SHARDJOB_DISPATCH_DSN
  --listen ADDR              where the REST API listens (default 127.0.0.1:8080)
  --node ID                  this node's id in leases (default host-pid)
  --allow-insecure-webhooks  let a worker's webhook URL be plain http
  --allow-private-webhooks   let notices go to loopback, private and link-local
                             addresses (a receiver inside your own network)

The token every call must send (Authorization: Bearer TOKEN) is read from the
environment variable SHARDJOB_DISPATCH_TOKEN (at least 16 bytes), never from
the command line. Start and fail notices go to each worker's webhook URL.
See docs/dispatch.md for the API.

Stop it with SIGINT or SIGTERM: it stops taking tasks, lets running notices
end and gives unfinished tasks back to the queue.
`

// runDispatch is "shardjob dispatch ...": it returns the exit code.
func runDispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, dispatchHelp)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] != "serve" {
		fmt.Fprintf(stderr, "shardjob dispatch: unknown command %q (run 'shardjob dispatch help')\n", args[0])
		return exitUsage
	}
	cfg, listen, err := parseServe(args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, dispatchHelp)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "shardjob dispatch serve: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	token := os.Getenv("SHARDJOB_DISPATCH_TOKEN")
	if len(token) < 16 {
		fmt.Fprintln(stderr, "shardjob dispatch serve: set SHARDJOB_DISPATCH_TOKEN to a token of at least 16 bytes")
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	err = serveDispatch(ctx, cfg, listen, token, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "shardjob dispatch serve: %s\n", oneLine(err.Error()))
		if errors.Is(err, dispatch.ErrInvalid) {
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}

// parseServe reads serve's flags into the node's configuration (no
// logger) and the address to listen on.
func parseServe(args []string) (dispatch.Config, string, error) {
	fs := flag.NewFlagSet("shardjob dispatch serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	driver := fs.String("driver", envOr("SHARDJOB_DISPATCH_DRIVER", "sqlite"), "")
	dsn := fs.String("dsn", os.Getenv("SHARDJOB_DISPATCH_DSN"), "")
	listen := fs.String("listen", "127.0.0.1:8080", "")
	node := fs.String("node", "", "")
	insecure := fs.Bool("allow-insecure-webhooks", false, "")
	private := fs.Bool("allow-private-webhooks", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return dispatch.Config{}, "", err
		}
		return dispatch.Config{}, "", fmt.Errorf("%w (run 'shardjob dispatch help')", err)
	}
	if fs.NArg() > 0 {
		return dispatch.Config{}, "", fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *dsn == "" && *driver == "sqlite" {
		*dsn = "dispatch.db"
	}
	return dispatch.Config{Driver: *driver, DSN: *dsn, NodeID: *node,
		AllowInsecureWebhooks: *insecure, AllowPrivateWebhooks: *private}, *listen, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// serveDispatch runs a dispatcher node and its REST API until ctx ends.
// It prints "serving on ADDR" once the API listens.
func serveDispatch(ctx context.Context, cfg dispatch.Config, listen, token string, stdout io.Writer) error {
	wh := &dispatch.Webhooks{Logger: cfg.Logger}
	cfg.OnStart, cfg.OnFail, cfg.OnTimeout = wh.Start, wh.Fail, wh.Timeout
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	d, err := dispatch.Open(octx, cfg)
	cancel()
	if err != nil {
		return err
	}
	wh.Workers = d
	closeDispatcher := func() error {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return d.Close(cctx)
	}
	h, err := dispatch.NewHandler(d, dispatch.HandlerConfig{Token: token, Logger: cfg.Logger})
	if err != nil {
		return errors.Join(err, closeDispatcher())
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return errors.Join(err, closeDispatcher())
	}
	if err := d.Start(ctx); err != nil {
		return errors.Join(err, ln.Close(), closeDispatcher())
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	serving := startstop.New(ctx) // Serve's goroutine: it ends with Shutdown below
	served := make(chan error, 1)
	if err := serving.Go(func(context.Context) { served <- srv.Serve(ln) }); err != nil {
		return errors.Join(err, ln.Close(), closeDispatcher()) // a new group refuses nothing
	}
	fmt.Fprintf(stdout, "serving on %s\n", ln.Addr())
	var errs []error
	select {
	case <-ctx.Done():
	case err := <-served:
		errs = append(errs, err)
		served = nil // Serve has returned: nothing more comes
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		errs = append(errs, err)
	}
	if served != nil {
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, serving.Stop(context.Background())) // Serve has returned: nil at once
	errs = append(errs, closeDispatcher())
	return errors.Join(errs...)
}

// dispatchHelpLine is the dispatcher's line in the main help.
var dispatchHelpLine = strings.TrimSpace(`
Dispatching one-off tasks (its own store, no ZooKeeper):
  dispatch serve [--driver sqlite|postgres] [--dsn DSN] [--listen ADDR]
                              run a dispatcher node with its REST API (see 'shardjob dispatch help')`)
