package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
)

const dispatchHelp = `shardjob dispatch serve runs a dispatcher node with its REST API.

Usage:
  shardjob dispatch serve [--driver sqlite|postgres] [--dsn DSN] [--listen ADDR] [--tokens-file FILE]
                          [--history-driver sqlite|postgres --history-dsn DSN]

Flags:
  --driver sqlite|postgres   the store (default sqlite)            env SHARDJOB_DISPATCH_DRIVER
  --dsn DSN                  a file for sqlite (default dispatch.db), a connection string for postgres
                                                                   env SHARDJOB_DISPATCH_DSN
  --listen ADDR              where the REST API listens (default 127.0.0.1:8080)
  --node ID                  this node's id in leases (default host-pid)
  --allow-insecure-webhooks  let a worker's webhook URL be plain http
  --allow-private-webhooks   let notices go to loopback, private and link-local
                             addresses (a receiver inside your own network)
  --tokens-file FILE         the tokens, with their names and roles (viewer,
                             operator, admin): the YAML list shardjob console
                             reads, see docs/user-guide.md "Roles and the audit trail"
  --history-driver DRIVER    write every call that changes something to the
                             audit trail of this history database: sqlite or
                             postgres (the one shardjob console and shardjob
                             audit use)
  --history-dsn DSN          that database: a file for sqlite, a connection
                             string for postgres

Every call must send a token (Authorization: Bearer TOKEN). The tokens come
from --tokens-file, SHARDJOB_TOKENS_FILE, SHARDJOB_TOKENS (the same YAML list
as shardjob console's) and SHARDJOB_DISPATCH_TOKEN (one admin token named
"token", at least 16 bytes), never from the command line; at least one is
required. A viewer reads the global cap, the workers and the tasks; an
operator also assigns, finishes and cancels tasks; an admin also sets the
global cap and puts workers (their caps, late policies and webhooks) and
reads the audit trail (GET /v1/audit). With a history database every call
that changes something is written to its audit trail first; when that fails
the call is refused (503) and not performed.

Start and fail notices go to each worker's webhook URL. See docs/dispatch.md
for the API.

Stop it with SIGINT or SIGTERM: it stops taking tasks, lets running notices
end and gives unfinished tasks back to the queue.
`

// serveFlags are dispatch serve's flags besides the node's configuration.
type serveFlags struct {
	listen        string
	tokensFile    string
	historyDriver string
	historyDSN    string
}

// runDispatch is "shardjob dispatch ...": it returns the exit code.
// SIGINT and SIGTERM stop it.
func runDispatch(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runDispatchCtx(ctx, args, stdout, stderr, os.Getenv)
}

// runDispatchCtx is runDispatch ending when ctx does; getenv reads the
// environment.
func runDispatchCtx(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
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
	cfg, sf, err := parseServe(args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, dispatchHelp)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "shardjob dispatch serve: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	hcfg, err := dispatchTokens(sf, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "shardjob dispatch serve: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	err = serveDispatch(ctx, cfg, sf, hcfg, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "shardjob dispatch serve: %s\n", oneLine(err.Error()))
		if errors.Is(err, dispatch.ErrInvalid) || errors.Is(err, history.ErrInvalidConfig) {
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}

// dispatchTokens reads the REST API's tokens from the environment and the
// flags: SHARDJOB_DISPATCH_TOKEN (one admin token), SHARDJOB_TOKENS_FILE,
// SHARDJOB_TOKENS and --tokens-file. The tokens themselves are checked by
// dispatch.NewHandler.
func dispatchTokens(sf serveFlags, getenv func(string) string) (dispatch.HandlerConfig, error) {
	token := getenv("SHARDJOB_DISPATCH_TOKEN")
	if token != "" && len(token) < 16 {
		return dispatch.HandlerConfig{}, errors.New("set SHARDJOB_DISPATCH_TOKEN to a token of at least 16 bytes")
	}
	toks, err := jobhttp.TokensFromEnv(getenv)
	if err != nil {
		return dispatch.HandlerConfig{}, err
	}
	if token == "" && len(toks) == 0 && sf.tokensFile == "" {
		return dispatch.HandlerConfig{}, fmt.Errorf("no token: every call needs one; set SHARDJOB_DISPATCH_TOKEN (at least 16 bytes), %s, %s or --tokens-file",
			jobhttp.EnvTokensFile, jobhttp.EnvTokens)
	}
	return dispatch.HandlerConfig{Token: token, Tokens: toks, TokensFile: sf.tokensFile}, nil
}

// parseServe reads serve's flags into the node's configuration (no
// logger) and the rest.
func parseServe(args []string) (dispatch.Config, serveFlags, error) {
	fs := flag.NewFlagSet("shardjob dispatch serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	driver := fs.String("driver", envOr("SHARDJOB_DISPATCH_DRIVER", "sqlite"), "")
	dsn := fs.String("dsn", os.Getenv("SHARDJOB_DISPATCH_DSN"), "")
	var sf serveFlags
	fs.StringVar(&sf.listen, "listen", "127.0.0.1:8080", "")
	fs.StringVar(&sf.tokensFile, "tokens-file", "", "")
	fs.StringVar(&sf.historyDriver, "history-driver", "", "")
	fs.StringVar(&sf.historyDSN, "history-dsn", "", "")
	node := fs.String("node", "", "")
	insecure := fs.Bool("allow-insecure-webhooks", false, "")
	private := fs.Bool("allow-private-webhooks", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return dispatch.Config{}, sf, err
		}
		return dispatch.Config{}, sf, fmt.Errorf("%w (run 'shardjob dispatch help')", err)
	}
	if fs.NArg() > 0 {
		return dispatch.Config{}, sf, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if (sf.historyDriver == "") != (sf.historyDSN == "") {
		return dispatch.Config{}, sf, errors.New("--history-driver and --history-dsn go together")
	}
	if *dsn == "" && *driver == "sqlite" {
		*dsn = "dispatch.db"
	}
	return dispatch.Config{Driver: *driver, DSN: *dsn, NodeID: *node,
		AllowInsecureWebhooks: *insecure, AllowPrivateWebhooks: *private}, sf, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// serveDispatch runs a dispatcher node and its REST API, with hcfg's
// tokens, until ctx ends. With sf's history database every call that
// changes something is written to its audit trail. It prints "serving on
// ADDR" once the API listens.
func serveDispatch(ctx context.Context, cfg dispatch.Config, sf serveFlags, hcfg dispatch.HandlerConfig, stdout io.Writer) (err error) {
	hcfg.Logger = cfg.Logger
	// The tokens are checked before anything is opened.
	if _, err := dispatch.NewHandler(nil, hcfg); err != nil {
		return err
	}
	if sf.historyDriver != "" {
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		aud, err := history.OpenAuditor(octx, history.Config{Driver: sf.historyDriver, DSN: sf.historyDSN, Logger: cfg.Logger})
		cancel()
		if err != nil {
			return fmt.Errorf("--history-driver %s: the audit trail: %w", sf.historyDriver, err)
		}
		defer func() { err = errors.Join(err, aud.Close()) }()
		hcfg.Audit = historyhttp.Audit(aud)
	}
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
	h, err := dispatch.NewHandler(d, hcfg)
	if err != nil {
		return errors.Join(err, closeDispatcher())
	}
	ln, err := net.Listen("tcp", sf.listen)
	if err != nil {
		return errors.Join(err, closeDispatcher())
	}
	if err := d.Start(ctx); err != nil {
		return errors.Join(err, ln.Close(), closeDispatcher())
	}
	err = serveUntilDone(ctx, ln, h, func() {
		fmt.Fprintf(stdout, "serving on %s\n", ln.Addr())
		if hcfg.Audit == nil {
			fmt.Fprintln(stdout, "not audited: give --history-driver and --history-dsn to keep an audit trail of the calls")
		}
	})
	return errors.Join(err, closeDispatcher())
}

// dispatchHelpLine is the dispatcher's line in the main help.
var dispatchHelpLine = strings.TrimSpace(`
Dispatching one-off tasks (its own store, no ZooKeeper):
  dispatch serve [--driver sqlite|postgres] [--dsn DSN] [--listen ADDR] [--tokens-file FILE]
                              run a dispatcher node with its REST API, tokens with roles and an audit
                              trail (see 'shardjob dispatch help')`)
