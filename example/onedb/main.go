// Command onedb runs everything on one PostgreSQL database: the registry
// (package regcenter/postgres), two scheduler instances running a sharded
// job every second whose runs go into the execution history (package
// history), and the dispatcher (package dispatch) running a batch of
// one-off tasks under a cap. It prints which instance ran which items and
// the dispatcher's progress, then reads the history and the dispatcher's
// count back from the database, and shuts down.
//
// From the repository root:
//
//	make demo-onedb
//
// or
//
//	go run ./example/onedb                                              # a throwaway PostgreSQL
//	go run ./example/onedb -pg 'postgres://shardjob@db:5432/jobs?sslmode=disable'  # yours
//
// With no -pg (nor SHARDJOB_PG) it starts a throwaway server from Debian's
// postgresql package (make postgresql installs it), in a temporary
// directory removed at the end. A URL carries no password: give it in
// PGPASSWORD or a passfile (~/.pgpass, PGPASSFILE). The two instances are
// two centers on the database, as two processes would have; the
// dispatcher's leases ride on the first one's session.
//
// It runs for -for (6 s), and on until every task has finished and both
// instances ran items (a minute at most); Ctrl-C stops it sooner.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/postgres" // regcenter.Open serves postgres:// URLs
	_ "github.com/shardjob/shardjob/store/postgres"     // the history and the dispatcher on PostgreSQL
)

const (
	namespace = "onedb-demo"
	items     = 4  // the job's sharding items
	tasks     = 30 // one-off tasks for the dispatcher
	taskCap   = 3  // at most this many run at once
)

func main() {
	pg := flag.String("pg", os.Getenv("SHARDJOB_PG"), "PostgreSQL `url` postgres://user@host:port/db, no password in it: PGPASSWORD or a passfile (env SHARDJOB_PG; default: a throwaway server)")
	runFor := flag.Duration("for", 6*time.Second, "how long it runs at least")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, *pg, *runFor); err != nil {
		fmt.Fprintln(os.Stderr, "onedb:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, url string, runFor time.Duration) (err error) {
	// Every wait below has a deadline; the shutdown's start from
	// context.WithoutCancel, so that a Ctrl-C still shuts down cleanly.
	bg := context.WithoutCancel(ctx)
	within := func(d time.Duration) (context.Context, context.CancelFunc) { return context.WithTimeout(bg, d) }
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	rcConfig := regcenter.Config{URL: url, Namespace: namespace, SessionTimeout: 4 * time.Second}
	if url == "" {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		srv, err := pgtest.Start(sctx)
		cancel()
		if err != nil {
			return fmt.Errorf("starting a throwaway PostgreSQL (or give -pg URL): %w", err)
		}
		defer func() { err = errors.Join(err, srv.Close()) }() // last: everything else is closed first
		url, rcConfig.URL = srv.DSN, srv.DSN
		fmt.Fprintf(out, "PostgreSQL: a throwaway server on 127.0.0.1:%d (data in %s, removed at the end)\n", srv.Port, srv.Dir)
	} else {
		if err := rcConfig.Validate(); err != nil { // a URL with a password is refused here
			return fmt.Errorf("-pg: %w", err)
		}
		fmt.Fprintln(out, "PostgreSQL:", strings.SplitN(url, "?", 2)[0])
	}

	octx, cancel := within(time.Minute)
	defer cancel()
	// The history: one recorder per process, shared by its schedulers.
	rec, err := history.Open(octx, history.Config{Driver: history.DriverPostgres, DSN: url, FlushInterval: 200 * time.Millisecond, Logger: quiet})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := within(10 * time.Second)
		defer cancel()
		err = errors.Join(err, rec.Close(cctx))
	}()

	// Two instances, each with a center of its own on the same database.
	var mu sync.Mutex
	ran := map[string][]int{} // instance → the items it ran since the last line printed
	var centers []regcenter.Center
	var scheds []*job.Scheduler
	for _, id := range []string{"node-1", "node-2"} {
		rc, err := regcenter.Open(octx, rcConfig, regcenter.WithLogger(quiet))
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, rc.Close()) }() // after the scheduler's shutdown
		centers = append(centers, rc)
		s, err := job.NewScheduler(rc, append([]job.Option{job.WithServerID(id), job.WithLogger(quiet)}, rec.SchedulerOptions()...)...)
		if err != nil {
			return err
		}
		err = s.Add(octx, job.Config{Name: "orders-sync", Cron: "* * * * * *", ShardingTotalCount: items, Overwrite: true},
			job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
				time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond) // some work
				mu.Lock()
				ran[id] = append(ran[id], sc.Item)
				mu.Unlock()
				return nil
			}))
		if err != nil {
			return err
		}
		scheds = append(scheds, s)
	}
	shutdown := func() (err error) { // stops firing; safe to call again
		for _, s := range scheds {
			sctx, cancel := within(10 * time.Second)
			err = errors.Join(err, s.Shutdown(sctx))
			cancel()
		}
		return err
	}
	defer func() { err = errors.Join(err, shutdown()) }()

	// The dispatcher: its tasks in the same database, its leases on the
	// first instance's session. A task's work runs after OnStart returned
	// and reports back with FinishAttempt, as a client would.
	var work sync.WaitGroup
	defer work.Wait() // after the dispatcher closed: it cancels the tasks' contexts
	var d *dispatch.Dispatcher
	d, err = dispatch.Open(octx, dispatch.Config{Driver: "postgres", DSN: url, Regcenter: centers[0], Logger: quiet,
		OnStart: func(ctx context.Context, task dispatch.Task) error {
			work.Go(func() {
				select {
				case <-time.After(time.Duration(100+rand.IntN(200)) * time.Millisecond):
					if err := d.FinishAttempt(ctx, task.UUID, task.Attempt); err != nil && ctx.Err() == nil {
						fmt.Fprintln(os.Stderr, "finish:", err) // the attempt times out and is retried
					}
				case <-ctx.Done(): // timed out, or shutting down
				}
			})
			return nil
		}})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := within(30 * time.Second)
		defer cancel()
		err = errors.Join(err, d.Close(cctx))
	}()
	// One worker (a tenant) with its cap; the batch spread over 3 s.
	if err := d.PutWorker(octx, dispatch.Worker{Name: "reports", MaxRunning: taskCap}); err != nil {
		return err
	}
	batch := make([]dispatch.NewTask, tasks)
	for i := range batch {
		batch[i] = dispatch.NewTask{ExternalID: fmt.Sprintf("report-%d", i)}
	}
	now := time.Now()
	a := dispatch.Assignment{Worker: "reports", Start: now, End: now.Add(3 * time.Second), Tasks: batch, MaxRetries: 2, Timeout: 10 * time.Second}
	if _, err := d.Assign(octx, a); err != nil {
		return err
	}
	// counts reads the worker's running and finished tasks from the database.
	counts := func() (running, finished int, err error) {
		qctx, cancel := within(10 * time.Second)
		defer cancel()
		q, err := d.Queues(qctx)
		if err != nil || len(q) == 0 {
			return 0, 0, err
		}
		return q[0].Running, q[0].Tasks[dispatch.StatusFinished], nil
	}

	for _, s := range scheds {
		if err := s.Start(octx); err != nil {
			return err
		}
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "node-1 and node-2 run orders-sync (%d items, every second); the dispatcher runs %d tasks, at most %d at a time\n", items, tasks, taskCap)
	fmt.Fprintln(out, "each second: the items each instance ran since the line before; the dispatcher's tasks running and finished")

	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	seen := map[string]bool{} // the instances that ran items so far
	for done := false; !done; {
		select {
		case <-ctx.Done():
			fmt.Fprintln(out, "interrupted; shutting down")
			done = true
			continue
		case <-tick.C:
		}
		running, finished, err := counts()
		if err != nil {
			return err
		}
		mu.Lock()
		line := fmt.Sprintf("%4.0fs ", time.Since(start).Seconds())
		for _, id := range []string{"node-1", "node-2"} {
			slices.Sort(ran[id])
			line += fmt.Sprintf(" %s ran %-10s", id, fmt.Sprint(ran[id]))
			seen[id] = seen[id] || len(ran[id]) > 0
		}
		clear(ran)
		mu.Unlock()
		fmt.Fprintf(out, "%s | dispatcher: %d running (cap %d), %d/%d finished\n", line, running, taskCap, finished, tasks)
		elapsed := time.Since(start)
		done = elapsed >= runFor && finished == tasks && seen["node-1"] && seen["node-2"] || elapsed >= runFor+time.Minute
	}

	// Read back from the database: the newest run of each item, and the
	// dispatcher's count. Firing stops first, so that the history is whole.
	if err := shutdown(); err != nil {
		return err
	}
	rctx, cancel := within(10 * time.Second)
	defer cancel()
	if err := rec.Flush(rctx); err != nil {
		return err
	}
	page, err := rec.Query(rctx, history.Filter{Job: "orders-sync", Limit: 100})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nhistory, the newest run of each item:")
	var newest [items]*history.Execution
	for i, e := range page.Executions { // newest first
		if e.Item >= 0 && e.Item < items && newest[e.Item] == nil {
			newest[e.Item] = &page.Executions[i]
		}
	}
	for item, e := range newest {
		if e != nil {
			fmt.Fprintf(out, "  item %d: fire %s on %s, %v, %s\n", item, e.FireTime.Local().Format("15:04:05"), e.Server, e.Duration().Round(time.Millisecond), e.Result)
		}
	}
	_, finished, err := counts()
	fmt.Fprintf(out, "dispatcher: %d of %d tasks finished\n", finished, tasks)
	return err
}
