// Command dispatch runs one-off tasks for three tenants with different caps
// through the dispatcher, and prints every half second how many of each
// tenant's tasks run against its cap, until all have finished.
//
// From the repository root:
//
//	go run ./example/dispatch                          # SQLite, in a temporary file
//	go run ./example/dispatch -local-postgres          # a throwaway PostgreSQL (Debian's postgresql package)
//	go run ./example/dispatch -postgres 'postgres://user@host/db?sslmode=disable'
//
// The dispatcher's leases are tied to a registry session (Config.Regcenter):
// with neither -zk nor -etcd, a single-member etcd inside the process, its
// data in a temporary directory removed at the end; -zk host:port uses a
// running ZooKeeper, -etcd host:port an etcd cluster.
//
// Each task's work runs on after its start listener returned, and reports
// back with Finish, as a real client would.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/example/internal/demoreg"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/store/postgres"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

func main() {
	pgDSN := flag.String("postgres", "", "use this PostgreSQL instead of SQLite")
	localPG := flag.Bool("local-postgres", false, "start a throwaway PostgreSQL and use it")
	perTenant := flag.Int("tasks", 200, "tasks per tenant")
	window := flag.Duration("window", 10*time.Second, "the window each tenant's batch is spread over")
	reg := demoreg.Register(nil)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, reg, *pgDSN, *localPG, *perTenant, *window); err != nil {
		fmt.Fprintln(os.Stderr, "dispatch example:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, flags *demoreg.Flags, pgDSN string, localPG bool, perTenant int, window time.Duration) (err error) {
	cfg := dispatch.Config{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	reg, err := flags.Start(sctx, "dispatch-example")
	if err == nil {
		defer func() { err = errors.Join(err, reg.Close()) }()
		var rc regcenter.Center
		rc, err = regcenter.Open(sctx, reg.Config(), regcenter.WithLogger(cfg.Logger))
		if err == nil {
			// Closed after the dispatcher (defers run last first).
			defer func() { err = errors.Join(err, rc.Close()) }()
			cfg.Regcenter = rc
			fmt.Printf("registry: %s\n", reg)
		}
	}
	cancel()
	if err != nil {
		return err
	}
	switch {
	case localPG:
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		srv, err := pgtest.Start(sctx)
		cancel()
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, srv.Close()) }()
		cfg.Driver, cfg.DSN = "postgres", srv.DSN
	case pgDSN != "":
		cfg.Driver, cfg.DSN = "postgres", pgDSN
	default:
		dir, err := os.MkdirTemp("", "dispatch-example-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.DSN = filepath.Join(dir, "dispatch.db")
	}

	var work sync.WaitGroup // the tasks' work, running after the listener returned
	defer work.Wait()
	var d *dispatch.Dispatcher
	cfg.OnStart = func(ctx context.Context, t dispatch.Task) error {
		work.Add(1)
		go func() {
			defer work.Done()
			timer := time.NewTimer(time.Duration(50+rand.IntN(200)) * time.Millisecond)
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-ctx.Done(): // timed out, cancelled or shutting down
				return
			}
			if err := d.FinishAttempt(ctx, t.UUID, t.Attempt); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "finish:", err)
			}
		}()
		return nil
	}
	d, err = dispatch.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err = errors.Join(err, d.Close(cctx))
	}()

	tenants := []dispatch.Worker{{Name: "gold", MaxRunning: 10}, {Name: "silver", MaxRunning: 5}, {Name: "bronze", MaxRunning: 2}}
	const global = 12
	if err := d.SetGlobalMax(ctx, global); err != nil {
		return err
	}
	start := time.Now()
	for _, w := range tenants {
		if err := d.PutWorker(ctx, w); err != nil {
			return err
		}
		ts := make([]dispatch.NewTask, perTenant)
		for i := range ts {
			ts[i] = dispatch.NewTask{ExternalID: fmt.Sprintf("%s-report-%d", w.Name, i)}
		}
		if _, err := d.Assign(ctx, dispatch.Assignment{Worker: w.Name, Start: start, End: start.Add(window), Tasks: ts, MaxRetries: 2, Timeout: 10 * time.Second}); err != nil {
			return err
		}
	}
	store := cfg.Driver
	if store == "" {
		store = "sqlite " + cfg.DSN
	}
	fmt.Printf("store %s: %d tasks for each of %d tenants over %s; global cap %d\n", store, perTenant, len(tenants), window, global)
	fmt.Println("each line: seconds since the assignment; per tenant, tasks running/its cap; all, running/the global cap;")
	fmt.Println("ended, tasks finished, failed or cancelled/all; late, starts after the task's acceptable start (the caps held it back)")
	if err := d.Start(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		ws, err := d.Workers(ctx)
		if err != nil {
			return err
		}
		g, err := d.Global(ctx)
		if err != nil {
			return err
		}
		var line []string
		for _, w := range ws {
			line = append(line, fmt.Sprintf("%s %2d/%-2d", w.Name, w.Running, w.MaxRunning))
		}
		ended, err := countEnded(ctx, d)
		if err != nil {
			return err
		}
		s := d.Stats()
		fmt.Printf("%5.1fs  running %s | all %2d/%d | ended %d/%d, late %d\n",
			time.Since(start).Seconds(), strings.Join(line, "  "), g.Running, g.MaxRunning, ended, perTenant*len(tenants), s.Late)
		if ended == perTenant*len(tenants) {
			return nil
		}
	}
}

func countEnded(ctx context.Context, d *dispatch.Dispatcher) (int, error) {
	var n int
	err := d.DB().QueryRowContext(ctx, `SELECT count(*) FROM dispatch_tasks WHERE status IN ('finished', 'failed', 'cancelled')`).Scan(&n)
	return n, err
}
