package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/embedded"
)

const runHelp = `shardjob run runs the script and HTTP jobs of a YAML file as one instance.

Usage:
  shardjob run [--embedded DIR | --pg URL] [--server-id ID] [--state-dir DIR] [--shutdown-timeout D]
               [--health ADDR] [--log-level L] [--follow [--follow-scripts]] FILE

The file has the regcenter and jobs sections described in docs/user-guide.md,
and may have a tracing section (exporter: otlp or stdout, endpoint, headers,
sampleRatio, serviceName) that sends spans of the fires and item runs to an
OpenTelemetry collector over OTLP/HTTP, or prints them to standard output;
SHARDJOB_REGCENTER_SERVERS, SHARDJOB_REGCENTER_ETCD or SHARDJOB_REGCENTER_PG
(and the other SHARDJOB_REGCENTER_ variables) override its regcenter section,
which names ZooKeeper servers (servers:), etcd endpoints (etcd:), an embedded
etcd member's directory (embeddedDir:) or a PostgreSQL database by URL
(postgres: postgres://user@host:5432/db, or url:; the password in PGPASSWORD,
a passfile or digestFile, never in the URL). Jobs of type script and http need no Go code;
simple and dataflow jobs need a program of one's own (package jobfile).

An embedded member needs no server: the instances on one host that name the
same directory share it. The first hosts the member (its data in the
directory); the others connect; when the host ends, another takes the member
over. For instances on several hosts use ZooKeeper or etcd.

Flags:
  --embedded DIR          run on the embedded member of DIR (hosting it, or
                          joining the instance that does), whatever the file's
                          regcenter section names
  --pg URL                run on the PostgreSQL registry of URL
                          (postgres://user@host:5432/db), whatever the file's
                          regcenter section names; a password in the URL is
                          refused: use PGPASSWORD, a passfile or digestFile
  --server-id ID          this instance's id (default: one per process, the
                          host's address and pid, as 10.0.0.5@-@4242); set one
                          to keep the server's flags and its script jobs'
                          state directory across restarts
  --state-dir DIR         where script jobs record their process groups, for
                          killing what a killed instance left behind at its
                          next start (default: under the temporary directory,
                          per namespace and server id)
  --shutdown-timeout D    how long running items may finish at SIGINT or
                          SIGTERM before they are stopped (default 30s)
  --health ADDR           serve probes on ADDR (:8080, 127.0.0.1:0): GET /livez
                          answers 200 while the process serves; GET /readyz
                          answers 200 once every job is registered, and 503
                          (with the reason) while starting, while the
                          registry is unreachable and from SIGTERM on — a
                          Kubernetes liveness and readiness probe (see
                          example/kubernetes)
  --log-level L           debug, info, warn or error (default info)
  --follow                also run the jobs defined at run time in the
                          namespace (POST /jobs of the HTTP API): http jobs
  --follow-scripts        with --follow, run script definitions too: they run
                          commands on this host chosen by whoever holds the
                          HTTP API's token
`

var runHelpLine = strings.TrimSpace(`
Running jobs from a YAML file, with no Go code:
  run FILE                    run its script and HTTP jobs as one instance (see 'shardjob run --help')`)

// runFile is "shardjob run ...": it returns the exit code. SIGINT and
// SIGTERM end the run.
func runFile(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runFileCtx(ctx, args, stdout, stderr)
}

// runFileCtx is runFile ending when ctx does.
func runFileCtx(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardjob run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	serverID := fs.String("server-id", "", "")
	stateDir := fs.String("state-dir", "", "")
	shutdown := fs.Duration("shutdown-timeout", 30*time.Second, "")
	level := fs.String("log-level", "info", "")
	follow := fs.Bool("follow", false, "")
	followScripts := fs.Bool("follow-scripts", false, "")
	embeddedDir := fs.String("embedded", "", "")
	pgURL := fs.String("pg", "", "")
	health := fs.String("health", "", "")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, runHelp)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "shardjob run: %s (run 'shardjob run --help')\n", oneLine(err.Error()))
		return exitUsage
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "shardjob run: want one FILE, got %d arguments (run 'shardjob run --help')\n", len(pos))
		return exitUsage
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(stderr, "shardjob run: --log-level %q: use debug, info, warn or error\n", *level)
		return exitUsage
	}
	if *followScripts && !*follow {
		fmt.Fprintln(stderr, "shardjob run: --follow-scripts needs --follow")
		return exitUsage
	}
	if *shutdown <= 0 {
		fmt.Fprintf(stderr, "shardjob run: --shutdown-timeout %v must be positive\n", *shutdown)
		return exitUsage
	}
	if *embeddedDir != "" && *pgURL != "" {
		fmt.Fprintln(stderr, "shardjob run: --embedded and --pg both name the registry: use one, not both")
		return exitUsage
	}
	if *pgURL != "" {
		if err := noPasswordInURL("--pg", *pgURL); err != nil {
			fmt.Fprintf(stderr, "shardjob run: %v\n", err)
			return exitUsage
		}
	}
	f, err := jobfile.LoadFile(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "shardjob run: %v\n", err)
		return exitUsage
	}
	if *embeddedDir != "" {
		// As --embedded of the other commands: the Dir holds the
		// member's endpoint and credentials.
		f.Regcenter.Servers, f.Regcenter.Etcd, f.Regcenter.EmbeddedDir, f.Regcenter.URL = nil, nil, *embeddedDir, ""
		f.Regcenter.Digest, f.Regcenter.DigestFile = "", ""
		if err := f.Regcenter.Validate(); err != nil {
			fmt.Fprintf(stderr, "shardjob run: --embedded: %s\n", strings.TrimPrefix(err.Error(), "regcenter: "))
			return exitUsage
		}
	}
	if *pgURL != "" {
		f.Regcenter.Servers, f.Regcenter.Etcd, f.Regcenter.EmbeddedDir, f.Regcenter.URL = nil, nil, "", strings.TrimSpace(*pgURL)
		if err := f.Regcenter.Validate(); err != nil {
			fmt.Fprintf(stderr, "shardjob run: --pg: %s\n", strings.TrimPrefix(err.Error(), "regcenter: "))
			return exitUsage
		}
	}
	for _, sp := range f.Jobs {
		if sp.Bound() {
			fmt.Fprintf(stderr, "shardjob run: job %q is a %s job, bound to Go code; shardjob run runs only script and http jobs\n", sp.Name, sp.TypeOrDefault())
			return exitUsage
		}
	}
	if err := jobfile.Check(f.Jobs); err != nil {
		fmt.Fprintf(stderr, "shardjob run: %s: %v\n", pos[0], err)
		return exitUsage
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	var p probes
	if *health != "" {
		ps, err := serveProbes(*health, &p, log)
		if err != nil {
			fmt.Fprintf(stderr, "shardjob run: %v\n", err)
			return exitUsage
		}
		defer func() {
			if err := ps.close(); err != nil {
				log.Warn("stopping the probes' server", "err", err)
			}
		}()
		// Not ready from the signal on, while running items finish.
		runDone := make(chan struct{})
		defer close(runDone)
		go func() { // owned here: ends with the run or at the signal
			select {
			case <-ctx.Done():
				p.stop()
			case <-runDone:
			}
		}()
	}
	err = jobfile.Run(ctx, f, jobfile.RunOptions{Options: jobfile.Options{StateDir: *stateDir, Logger: log},
		ServerID: *serverID, ShutdownTimeout: *shutdown, Follow: *follow, FollowScripts: *followScripts,
		Stdout: stdout, Started: p.started,
		Open: func(ctx context.Context, cfg regcenter.Config, opts ...regcenter.Option) (regcenter.Center, error) {
			return openShared(ctx, cfg, log, opts...)
		}})
	if err != nil {
		fmt.Fprintf(stderr, "shardjob run: %s\n", describe(err))
		if errors.Is(err, job.ErrInvalidConfig) || errors.Is(err, jobfile.ErrInvalidJob) {
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}

// openShared connects shardjob run to its registry: an embedded member's
// Dir (embeddedDir:, --embedded) is shared with the other processes that
// name it (embedded.Join): the first hosts the member, the others connect,
// and one takes it over when its host ends. Any other registry is
// regcenter.Open's.
func openShared(ctx context.Context, cfg regcenter.Config, log *slog.Logger, opts ...regcenter.Option) (regcenter.Center, error) {
	if cfg.EmbeddedDir == "" {
		cctx, cancel := context.WithTimeout(ctx, cfg.WithDefaults().ConnectTimeout+time.Second)
		defer cancel()
		return regcenter.Open(cctx, cfg, opts...)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	return embedded.Join(ctx, embedded.Config{Dir: cfg.EmbeddedDir, Namespace: cfg.Namespace,
		SessionTimeout: cfg.SessionTimeout, MaxNodeBytes: cfg.MaxNodeBytes, Logger: log}, opts...)
}
