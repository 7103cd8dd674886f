// Command output shows a run's output: three jobs record a small result
// each time they run — a Go job with job.RecordOutput, a script job (its
// standard output) and an HTTP job (the response's body) — the history
// keeps it with each execution, and the program prints the newest
// executions with their outputs, as "shardjob history" and the console's
// history page show them.
//
// From the repository root:
//
//	go run ./example/output                       # an embedded etcd: nothing to install
//	go run ./example/output -zk 127.0.0.1:2181    # a running ZooKeeper
//	go run ./example/output -db ./history.db      # keeps the history here
//
// With neither -zk nor -etcd the instance uses one etcd member inside
// this process, its data in a temporary directory removed at the end; the
// history, too, is written to a temporary directory unless -db names a
// file (emptied first and kept: "shardjob history --history-dsn FILE"
// reads it afterwards). The script job needs Linux; elsewhere it is left
// out. It takes about 5 seconds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/shardjob/shardjob/example/internal/demoreg"
	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype/httpjob"
	"github.com/shardjob/shardjob/jobtype/script"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

const namespace = "shardjob-output-demo"

func main() {
	reg := demoreg.Register(nil)
	dbFlag := flag.String("db", "", "the SQLite `file` the history is written to, emptied first and kept (default: one in a temporary directory, removed at the end)")
	runFor := flag.Duration("for", 3*time.Second, "how long the jobs run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, reg, *dbFlag, *runFor); err != nil {
		fmt.Fprintln(os.Stderr, "output demo:", err)
		os.Exit(1)
	}
}

// countOrders is a Go job: it does its work and records what it found.
func countOrders(ctx context.Context, sc job.ShardingContext) error {
	orders := 10*sc.Item + sc.FireTime.Second()%7 // stands for a query's result
	return job.RecordOutput(ctx, map[string]any{"region": sc.ItemParameter, "orders": orders})
}

func run(ctx context.Context, flags *demoreg.Flags, db string, runFor time.Duration) (err error) {
	keep := db != ""
	if !keep {
		dir, err := os.MkdirTemp("", "shardjob-output-demo-")
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, os.RemoveAll(dir)) }() // last, after the recorder closed its file
		db = filepath.Join(dir, "history.db")
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(db + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	reg, err := flags.Start(startCtx, namespace)
	cancel()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, reg.Close()) }()
	fmt.Printf("Registry: %s\n", reg)
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	// The service the HTTP job calls: it answers JSON, which is kept as JSON.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status": "ok", "queued": %d}`, time.Now().Second()%5)
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }() // ends with Shutdown below
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = errors.Join(err, srv.Shutdown(sctx))
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
	}()

	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rec, err := history.Open(octx, history.Config{DSN: db, FlushInterval: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = errors.Join(err, rec.Close(cctx))
	}()
	rcConfig := reg.Config()
	rcConfig.SessionTimeout = 4 * time.Second
	rc, err := regcenter.Open(octx, rcConfig, regcenter.WithLogger(quiet))
	if err != nil {
		return err
	}
	defer rc.Close()
	s, err := job.NewScheduler(rc, append([]job.Option{job.WithServerID("node-1"), job.WithLogger(quiet)}, rec.SchedulerOptions()...)...)
	if err != nil {
		return err
	}
	every := func(name string, items int, params string) job.Config {
		return job.Config{Name: name, Cron: "* * * * * *", ShardingTotalCount: items, ShardingItemParameters: params, Overwrite: true}
	}
	if err := s.Add(octx, every("orders-count", 2, "0=Beijing,1=Shanghai"), job.SimpleFunc(countOrders)); err != nil {
		return err
	}
	hj, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: "http://" + ln.Addr().String() + "/queue", Logger: quiet})
	if err != nil {
		return err
	}
	if err := s.Add(octx, every("queue-check", 1, ""), hj); err != nil {
		return err
	}
	// A script's standard output: text becomes a JSON string (its end, up
	// to 64 KiB); a script printing one JSON value would have it kept as JSON.
	sj, err := script.New(script.Config{Shell: true, Command: []string{`echo "starting export"; echo "exported $(( $(date +%s) % 50 + 100 )) rows to /tmp/report.csv"`}, Logger: quiet})
	switch {
	case errors.Is(err, script.ErrUnsupported):
		fmt.Println("(the script job needs Linux: left out)")
	case err != nil:
		return err
	default:
		if err := s.Add(octx, every("report-export", 1, ""), sj); err != nil {
			return err
		}
	}
	if err := s.Start(octx); err != nil {
		return err
	}
	fmt.Printf("the jobs run every second for %v, recording to %s...\n", runFor, db)
	select {
	case <-time.After(runFor):
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := s.Shutdown(sctx); err != nil {
		return err
	}
	if err := rec.Flush(sctx); err != nil {
		return err
	}
	page, err := rec.Query(sctx, history.Filter{Limit: 8})
	if err != nil {
		return err
	}
	fmt.Println("\nThe newest executions and their outputs (history.Execution.Output):")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIRE\tJOB\tITEM\tRESULT\tOUTPUT")
	for _, e := range page.Executions {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", e.FireTime.Local().Format("15:04:05"), e.Job, e.Item, e.Result, e.Output)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if keep {
		fmt.Printf("\nread it again with: go run ./cmd/shardjob history --history-dsn %s [--output-width 0] [--json]\n", db)
	} else {
		fmt.Println("\nrun with -db FILE to keep the history and read it with: go run ./cmd/shardjob history --history-dsn FILE")
	}
	return nil
}
