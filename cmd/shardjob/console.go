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
	"github.com/shardjob/shardjob/jobhttp/dispatchhttp"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
	"github.com/shardjob/shardjob/regcenter"
)

const consoleHelp = `shardjob console serves the web console and the JSON API of a namespace.

Usage:
  shardjob console [--listen ADDR] [--protect-reads] [--open-output] [--tokens-file FILE]
                   [--max-definitions N] [--max-definition-bytes N]
                   [--history-driver sqlite|postgres --history-dsn DSN]
                   [--dispatch-driver sqlite|postgres --dispatch-dsn DSN] [connection flags]

It serves what an application mounts with jobhttp.NewHandler: open the URL
it prints (http://ADDR/console/) in a browser.

Flags:
  --listen ADDR              where to listen (default 127.0.0.1:8088)
  --protect-reads            reads need the token too, not only actions
  --open-output              serve the runs' output and error text in the
                             history to readers without the token too
  --max-definitions N        jobs defined at run time (POST /jobs) the
                             namespace may hold (default 1000; -1: no limit)
  --max-definition-bytes N   largest definition document (default 65536)
  --tokens-file FILE         the tokens, with their names and roles (viewer,
                             operator, admin): a YAML list, see
                             docs/user-guide.md "Roles and the audit trail"
  --history-driver DRIVER    also show the execution history, read from the
                             database the instances record it in (package
                             history): sqlite or postgres; every operation
                             is written to its audit trail
  --history-dsn DSN          that database: a file for sqlite, a connection
                             string for postgres
  --dispatch-driver DRIVER   also show a dispatcher's workers and queues, read
                             from its store: sqlite or postgres
  --dispatch-dsn DSN         that store: a file for sqlite, a connection string
                             for postgres

The connection flags are those of every command (--zk, --namespace,
--digest-file, --tls-*, --config, --timeout; see 'shardjob help').

The tokens (Authorization: Bearer TOKEN; the page asks for it) come from
--tokens-file, SHARDJOB_TOKENS_FILE, SHARDJOB_TOKENS (the same YAML list) and
SHARDJOB_TOKEN (one admin token named "token"), never from the command line.
A viewer reads, an operator also triggers, disables, pauses and drains, an
admin also changes configs, creates and removes jobs and reads the audit
trail. Without any token the console is read-only. With a history database
every operation is written to its audit trail first; when that fails the
operation is refused. Listen on a loopback address, or put TLS in front: the
token travels in every request.

Stop it with SIGINT or SIGTERM.
`

// consoleHelpLine is the console's line in the main help.
var consoleHelpLine = strings.TrimSpace(`
The web console:
  console [--listen ADDR]     serve the console and the JSON API for the namespace, with the history and a
                              dispatcher's queues if given their databases (see 'shardjob console --help')`)

// consoleFlags are the console's own flags.
type consoleFlags struct {
	listen         string
	protectReads   bool
	openOutput     bool
	maxDefs        int
	maxDefBytes    int
	historyDriver  string
	historyDSN     string
	dispatchDriver string
	dispatchDSN    string
	tokensFile     string
}

// runConsole is "shardjob console ...": it returns the exit code. SIGINT
// and SIGTERM stop it.
func runConsole(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runConsoleCtx(ctx, args, stdout, stderr, os.Getenv)
}

// runConsoleCtx is runConsole ending when ctx does.
func runConsoleCtx(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	var o options
	var cf consoleFlags
	fs := newFlagSet(nil, &o)
	fs.StringVar(&cf.listen, "listen", "127.0.0.1:8088", "")
	fs.BoolVar(&cf.protectReads, "protect-reads", false, "")
	fs.BoolVar(&cf.openOutput, "open-output", false, "")
	fs.IntVar(&cf.maxDefs, "max-definitions", 0, "")
	fs.IntVar(&cf.maxDefBytes, "max-definition-bytes", 0, "")
	fs.StringVar(&cf.historyDriver, "history-driver", "", "")
	fs.StringVar(&cf.historyDSN, "history-dsn", "", "")
	fs.StringVar(&cf.dispatchDriver, "dispatch-driver", "", "")
	fs.StringVar(&cf.dispatchDSN, "dispatch-dsn", "", "")
	fs.StringVar(&cf.tokensFile, "tokens-file", "", "")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, consoleHelp)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "shardjob console: %s (run 'shardjob console --help')\n", oneLine(err.Error()))
		return exitUsage
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "shardjob console: unexpected argument %q (run 'shardjob console --help')\n", pos[0])
		return exitUsage
	}
	if (cf.historyDriver == "") != (cf.historyDSN == "") {
		fmt.Fprintln(stderr, "shardjob console: --history-driver and --history-dsn go together")
		return exitUsage
	}
	if (cf.dispatchDriver == "") != (cf.dispatchDSN == "") {
		fmt.Fprintln(stderr, "shardjob console: --dispatch-driver and --dispatch-dsn go together")
		return exitUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg, err := regcenterConfig(&o, set, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "shardjob console: %s\n", describe(err))
		return exitCode(err)
	}
	toks, err := jobhttp.TokensFromEnv(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "shardjob console: %s\n", describe(err))
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	opts := jobhttp.Options{Token: getenv("SHARDJOB_TOKEN"), Tokens: toks, TokensFile: cf.tokensFile}
	err = serveConsole(ctx, cfg, cf, opts, logger, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "shardjob console: %s\n", describe(err))
		if errors.Is(err, dispatch.ErrInvalid) || errors.Is(err, history.ErrInvalidConfig) || errors.Is(err, history.ErrNoDatabase) ||
			errors.Is(err, jobhttp.ErrInvalidTokens) {
			return exitUsage
		}
		return exitCode(err)
	}
	return exitOK
}

// serveConsole connects, opens the stores the flags name, and serves the
// handler until ctx ends. It prints the console's URL once it listens.
func serveConsole(ctx context.Context, cfg regcenter.Config, cf consoleFlags, opts jobhttp.Options, logger *slog.Logger, stdout io.Writer) (err error) {
	opts.Logger, opts.ProtectReads, opts.OpenOutput = logger, cf.protectReads, cf.openOutput
	opts.MaxDefinitions, opts.MaxDefinitionBytes = cf.maxDefs, cf.maxDefBytes
	// The tokens are checked before anything is opened.
	if _, err := jobhttp.New(nil, opts); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout+time.Second)
	rc, err := regcenter.Open(cctx, cfg, regcenter.WithLogger(logger))
	cancel()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rc.Close()) }()

	// The stores the console reads besides the registry, each optional.
	if cf.historyDriver != "" {
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		rd, err := history.OpenReader(octx, history.Config{Driver: cf.historyDriver, DSN: cf.historyDSN, Logger: logger})
		cancel()
		if err != nil {
			return fmt.Errorf("--history-driver %s: %w", cf.historyDriver, err)
		}
		defer func() { err = errors.Join(err, rd.Close()) }()
		opts.History = historyhttp.New(rd)
		octx, cancel = context.WithTimeout(ctx, time.Minute)
		aud, err := history.OpenAuditor(octx, history.Config{Driver: cf.historyDriver, DSN: cf.historyDSN, Logger: logger})
		cancel()
		if err != nil {
			return fmt.Errorf("--history-driver %s: the audit trail: %w", cf.historyDriver, err)
		}
		defer func() { err = errors.Join(err, aud.Close()) }()
		opts.Audit = historyhttp.Audit(aud)
	}
	if cf.dispatchDriver != "" {
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		d, err := dispatch.Open(octx, dispatch.Config{Driver: cf.dispatchDriver, DSN: cf.dispatchDSN, Logger: logger})
		cancel()
		if err != nil {
			return fmt.Errorf("--dispatch-driver %s: %w", cf.dispatchDriver, err)
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			err = errors.Join(err, d.Close(sctx))
		}()
		opts.Dispatcher = dispatchhttp.New(d)
	}

	ln, err := net.Listen("tcp", cf.listen)
	if err != nil {
		return err
	}
	h, err := jobhttp.New(rc, opts)
	if err != nil {
		return errors.Join(err, ln.Close())
	}
	return serveUntilDone(ctx, ln, h, func() {
		fmt.Fprintf(stdout, "console: http://%s/console/\n", ln.Addr())
		if opts.Token == "" && len(opts.Tokens) == 0 && opts.TokensFile == "" {
			fmt.Fprintln(stdout, "read-only: set SHARDJOB_TOKEN, SHARDJOB_TOKENS_FILE or --tokens-file to allow actions")
		}
		if opts.Audit == nil {
			fmt.Fprintln(stdout, "not audited: give --history-driver and --history-dsn to keep an audit trail of the operations")
		}
	})
}
