// Command console shows the web console over a small live cluster: three
// instances running three jobs (one of whose items fails now and then),
// recording their history to SQLite, and a dispatcher on SQLite with three
// workers and a steady trickle of tasks.
// It serves the console on 127.0.0.1:8088 and prints its URL and the token
// that its actions need. Every instance has its own registry session and
// server id, as separate processes would.
//
// From the repository root:
//
//	make console-demo
//
// or
//
//	go run ./example/console                       # an embedded etcd: nothing to install
//	go run ./example/console -zk 127.0.0.1:2181    # a running ZooKeeper
//	go run ./example/console -etcd 127.0.0.1:2379  # a running etcd cluster
//
// With neither -zk nor -etcd the instances share one etcd member inside
// this process, its data in a temporary directory removed at the end.
//
// It runs until Ctrl-C and then stops cleanly.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/metrics"
	"github.com/shardjob/shardjob/metrics/dispatchmetrics"
	"github.com/shardjob/shardjob/metrics/historymetrics"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/example/internal/demoreg"
	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/dispatchhttp"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

const namespace = "shardjob-console-demo"

func main() {
	reg := demoreg.Register(nil)
	listen := flag.String("listen", "127.0.0.1:8088", "where the console listens")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, reg, *listen); err != nil {
		fmt.Fprintln(os.Stderr, "console demo:", err)
		os.Exit(1)
	}
}

// jobs are the demo's jobs; orders-sync's item 3 fails every third run.
var jobs = []job.Config{
	{Name: "orders-sync", Cron: "*/5 * * * * *", ShardingTotalCount: 4, Failover: true,
		ShardingItemParameters: "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen", Description: "copies new orders to the warehouse"},
	{Name: "cache-warm", Cron: "*/10 * * * * *", ShardingTotalCount: 3, Description: "fills the product cache"},
	{Name: "daily-report", Cron: "0 0 2 * * *", ShardingTotalCount: 2, Description: "the nightly sales report"},
}

func work(ctx context.Context, sc job.ShardingContext) error {
	select {
	case <-time.After(time.Duration(100+mrand.IntN(700)) * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	if sc.JobName == "orders-sync" && sc.Item == 3 && mrand.IntN(3) == 0 {
		return errors.New("warehouse API answered 503 Service Unavailable")
	}
	return nil
}

func run(ctx context.Context, flags *demoreg.Flags, listen string) (err error) {
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	reg, err := flags.Start(startCtx, namespace)
	cancel()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, reg.Close()) }()
	fmt.Printf("Registry: %s\n", reg)
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	connect := func() (regcenter.Center, error) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return regcenter.Open(cctx, reg.Config(), regcenter.WithLogger(quiet))
	}

	dir, err := os.MkdirTemp("", "shardjob-console-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rec, err := history.Open(ctx, history.Config{DSN: filepath.Join(dir, "history.db"), Logger: quiet})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = rec.Close(sctx)
	}()

	// node-1's Prometheus metrics, with the dispatcher's queues and the
	// history's writer, are served at /metrics beside the console (each
	// process of a real deployment exports its own instance's).
	m, err := metrics.New(metrics.Options{Logger: quiet})
	if err != nil {
		return err
	}
	if err := historymetrics.Watch(m, rec); err != nil {
		return err
	}
	for _, id := range []string{"node-1", "node-2", "node-3"} {
		rc, err := connect()
		if err != nil {
			return err
		}
		defer rc.Close()
		opts := append([]job.Option{job.WithServerID(id), job.WithLogger(quiet),
			job.WithLoadScore(2*time.Second, 4, nil), job.WithAlarmThreshold(4)}, rec.SchedulerOptions()...)
		if id == "node-1" {
			opts = append(opts, m.SchedulerOptions()...)
		}
		s, err := job.NewScheduler(rc, opts...)
		if err != nil {
			return err
		}
		if id == "node-1" {
			if err := m.Watch(s); err != nil {
				return err
			}
		}
		for _, cfg := range jobs {
			if err := s.Add(ctx, cfg, job.SimpleFunc(work)); err != nil {
				return err
			}
		}
		if err := s.Start(ctx); err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_ = s.Shutdown(sctx)
		}()
	}

	d, err := startDispatcher(ctx, dir, quiet)
	if err != nil {
		return err
	}
	if err := dispatchmetrics.Watch(m, d); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = d.Close(sctx)
	}()

	token := os.Getenv("SHARDJOB_TOKEN")
	if token == "" {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		token = hex.EncodeToString(b)
	}
	rc, err := connect()
	if err != nil {
		return err
	}
	defer rc.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second,
		Handler: jobhttp.NewHandler(rc, jobhttp.Options{Token: token, Dispatcher: dispatchhttp.New(d), History: historyhttp.New(rec), Metrics: m.Handler(), Logger: slog.Default()})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("\nconsole: http://%s/console/\ntoken:   %s   (paste it in the page's Token box to act)\nmetrics: http://%s/metrics   (node-1's, in Prometheus' text format)\n\nCtrl-C stops the demo.\n", ln.Addr(), token, ln.Addr())

	select {
	case <-ctx.Done():
	case err = <-served:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return errors.Join(err, srv.Shutdown(sctx))
}

// startDispatcher opens a dispatcher on SQLite in dir,
// with three workers, and assigns each a batch of tasks every 15 seconds;
// a task takes one to six seconds.
func startDispatcher(ctx context.Context, dir string, log *slog.Logger) (*dispatch.Dispatcher, error) {
	d, err := dispatch.Open(ctx, dispatch.Config{DSN: filepath.Join(dir, "dispatch.db"), Logger: log, FinishOnReturn: true,
		OnStart: func(ctx context.Context, t dispatch.Task) error {
			select {
			case <-time.After(time.Duration(1000+mrand.IntN(5000)) * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}})
	if err != nil {
		return nil, err
	}
	workers := []dispatch.Worker{{Name: "email", MaxRunning: 3}, {Name: "sms", MaxRunning: 1}, {Name: "webhooks", MaxRunning: 0}}
	for _, w := range workers {
		if err := d.PutWorker(ctx, w); err != nil {
			return nil, errors.Join(err, d.Close(ctx))
		}
	}
	if err := d.Start(ctx); err != nil {
		return nil, errors.Join(err, d.Close(ctx))
	}
	go func() {
		for round := 0; ; round++ {
			now := time.Now()
			for _, w := range workers {
				var tasks []dispatch.NewTask
				for i := range 5 {
					tasks = append(tasks, dispatch.NewTask{ExternalID: fmt.Sprintf("%s-%d-%d", w.Name, round, i)})
				}
				_, _ = d.Assign(ctx, dispatch.Assignment{Worker: w.Name, Start: now, End: now.Add(20 * time.Second), Tasks: tasks})
			}
			select {
			case <-time.After(15 * time.Second):
			case <-ctx.Done():
				return
			}
		}
	}()
	return d, nil
}
