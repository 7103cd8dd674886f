// Command history shows the execution history: two instances run two
// jobs firing every second (one of them fails on one item), each instance
// records its executions and job status events with history.Recorder into
// one SQLite file, and the program then prints the history through the
// Query API: the newest executions, the failed ones, and the events.
//
// From the repository root:
//
//	make demo-history
//
// or
//
//	go run ./example/history                       # an embedded etcd: nothing to install
//	go run ./example/history -zk 127.0.0.1:2181    # a running ZooKeeper
//	go run ./example/history -etcd 127.0.0.1:2379  # a running etcd cluster
//	go run ./example/history -db ./history.db      # keeps the database here
//
// With neither -zk nor -etcd the instances share one etcd member inside
// this process, its data in a temporary directory removed at the end.
// Without -db the history, too, is written in a fresh temporary directory
// removed at the end; with -db FILE it is written there (emptied first)
// and kept, and "shardjob history --history-dsn FILE" reads it afterwards.
//
// It takes about 10 seconds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/shardjob/shardjob/example/internal/demoreg"
	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

const namespace = "shardjob-history-demo"

func main() {
	reg := demoreg.Register(nil)
	dbFlag := flag.String("db", "", "the SQLite `file` the history is written to, emptied first and kept (default: one in a temporary directory, removed at the end)")
	runFor := flag.Duration("for", 6*time.Second, "how long the jobs run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, reg, *dbFlag, *runFor); err != nil {
		fmt.Fprintln(os.Stderr, "history demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, flags *demoreg.Flags, db string, runFor time.Duration) (err error) {
	keep := db != ""
	if !keep {
		dir, err := os.MkdirTemp("", "shardjob-history-demo-")
		if err != nil {
			return err
		}
		// Removed last, after the recorder closed its file.
		defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
		db = filepath.Join(dir, "history.db")
	}
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	reg, err := flags.Start(startCtx, namespace)
	cancel()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, reg.Close()) }()
	fmt.Printf("Registry: %s\n", reg)
	rcConfig := reg.Config()
	rcConfig.SessionTimeout = 4 * time.Second
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	// Start from an empty history, so that what is printed is this run's.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(db + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// One recorder per process; both instances of this demo live in one
	// process and share it.
	rec, err := history.Open(octx, history.Config{DSN: db, FlushInterval: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rec.Close(cctx); err != nil {
			fmt.Fprintln(os.Stderr, "history demo:", err)
		}
	}()

	var scheds []*job.Scheduler
	for _, id := range []string{"node-1", "node-2"} {
		rc, err := regcenter.Open(octx, rcConfig, regcenter.WithLogger(quiet))
		if err != nil {
			return err
		}
		defer rc.Close()
		opts := append([]job.Option{job.WithServerID(id), job.WithLogger(quiet)}, rec.SchedulerOptions()...)
		s, err := job.NewScheduler(rc, opts...)
		if err != nil {
			return err
		}
		err = s.Add(octx, job.Config{Name: "orders-sync", Cron: "* * * * * *", ShardingTotalCount: 2, Overwrite: true},
			job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
				time.Sleep(time.Duration(10+20*sc.Item) * time.Millisecond) // some work
				return nil
			}))
		if err != nil {
			return err
		}
		err = s.Add(octx, job.Config{Name: "invoices", Cron: "* * * * * *", ShardingTotalCount: 2, Overwrite: true},
			job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
				if sc.Item == 1 {
					return fmt.Errorf("invoice service for item %d: 503 Service Unavailable", sc.Item)
				}
				return nil
			}))
		if err != nil {
			return err
		}
		if err := s.Start(octx); err != nil {
			return err
		}
		scheds = append(scheds, s)
	}
	fmt.Printf("two instances run orders-sync and invoices every second for %v, recording to %s...\n", runFor, db)
	select {
	case <-time.After(runFor):
	case <-ctx.Done():
	}
	for _, s := range scheds {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s.Shutdown(sctx)
		cancel()
		if err != nil {
			return err
		}
	}
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rec.Flush(fctx); err != nil {
		return err
	}
	return show(fctx, rec, db, keep)
}

// show prints the history through the Query API.
func show(ctx context.Context, rec *history.Recorder, db string, kept bool) error {
	page, err := rec.Query(ctx, history.Filter{Limit: 8})
	if err != nil {
		return err
	}
	fmt.Println("\nThe newest executions (history.Filter{Limit: 8}):")
	printExecutions(page.Executions)
	if page.Next != "" {
		fmt.Printf("(older ones: history.Filter{Before: %q})\n", page.Next)
	}
	failed, err := rec.Query(ctx, history.Filter{Failed: true, Limit: 4})
	if err != nil {
		return err
	}
	fmt.Println("\nFailed executions (history.Filter{Failed: true, Limit: 4}):")
	printExecutions(failed.Executions)
	events, err := rec.QueryEvents(ctx, history.Filter{Limit: 12})
	if err != nil {
		return err
	}
	fmt.Println("\nJob status events (QueryEvents):")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tJOB\tSERVER\tKIND\tUNITS\tDETAIL")
	for _, ev := range events.Events {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", ev.At.Local().Format("15:04:05.000"), ev.Job, ev.Server, ev.Kind, ev.Units, ev.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	st := rec.Stats()
	fmt.Printf("\nrecorded %d, written %d, dropped %d, write errors %d\n", st.Recorded, st.Written, st.Dropped, st.WriteErrors)
	if kept {
		fmt.Printf("read it again with: go run ./cmd/shardjob history --history-dsn %s [--failed] [--events]\n", db)
	} else {
		fmt.Println("the history's temporary directory is removed now; run with -db FILE to keep it and read it again with: go run ./cmd/shardjob history --history-dsn FILE")
	}
	return nil
}

func printExecutions(es []history.Execution) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIRE\tJOB\tITEM\tKIND\tSERVER\tDURATION\tRESULT\tERROR")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%v\t%s\t%s\n", e.FireTime.Local().Format("15:04:05"), e.Job, e.Item, e.Kind, e.Server,
			e.Duration().Round(time.Millisecond), e.Result, e.Error)
	}
	_ = tw.Flush()
}
