// Command tracing shows a scheduler's OpenTelemetry spans: every fire of a
// job on an instance is a "shardjob.fire" span, every item run a child
// "shardjob.item" span; a Go job continues the trace from its context, a
// script job gets the item's span in TRACEPARENT and an HTTP job sends it
// in the traceparent header. The spans are printed, as they end, by the
// SDK's stdout exporter; the program stops by itself after a few fires.
//
// From the repository root:
//
//	go run ./example/tracing                       # an embedded etcd: nothing to install
//	go run ./example/tracing -zk 127.0.0.1:2181    # a running ZooKeeper (make zk-start starts one there)
//	go run ./example/tracing -fires 1 2>/dev/null  # the spans alone, without the log
//
// The spans (JSON) go to standard output; the log, with the script's
// output and what the HTTP receiver got, to standard error. The script
// job needs Linux.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/shardjob/shardjob/example/internal/demoreg"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype/httpjob"
	"github.com/shardjob/shardjob/jobtype/script"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
)

func main() {
	reg := demoreg.Register(nil)
	fires := flag.Int("fires", 2, "stop after this many fires of the jobs")
	flag.Parse()
	if *fires < 1 {
		fmt.Fprintln(os.Stderr, "tracing: -fires must be at least 1")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, reg, *fires); err != nil {
		fmt.Fprintln(os.Stderr, "tracing:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, flags *demoreg.Flags, fires int) (err error) {
	// The tracer provider: spans printed as they end. A production
	// program would export them in batches (sdktrace.WithBatcher) to a
	// collector, e.g. with the OTLP exporter.
	exp, err := stdouttrace.New(stdouttrace.WithPrettyPrint())
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("tracing-demo"))))
	defer func() {
		// Last: after the scheduler's Shutdown, so that every span is out.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = errors.Join(err, tp.Shutdown(sctx))
	}()

	reg, err := flags.Start(ctx, "tracing-demo")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, reg.Close()) }()
	slog.Info("registry", "is", reg.String())
	rc, err := regcenter.Open(ctx, reg.Config())
	if err != nil {
		return err
	}
	defer rc.Close()

	// done is closed once each of the three jobs has ended fires fires.
	done := make(chan struct{})
	var mu sync.Mutex
	ended := map[string]int{}
	counter := listener.FireFuncs{Ended: func(f listener.Fire) {
		mu.Lock()
		defer mu.Unlock()
		ended[f.Job]++
		if len(ended) == 3 && ended[f.Job] == fires && min(ended["report"], ended["export"], ended["notify"]) == fires {
			close(done)
		}
	}}
	sched, err := job.NewScheduler(rc, job.WithServerID("demo-1"), job.WithTracerProvider(tp), job.WithFireListener(counter))
	if err != nil {
		return err
	}

	// A Go job: its context carries the item's span, so the span it
	// starts is the item span's child.
	tracer := tp.Tracer("example/tracing")
	report := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		_, span := tracer.Start(ctx, "render-report")
		defer span.End()
		slog.Info("report", "item", sc.Item, "trace", trace.SpanContextFromContext(ctx).TraceID())
		return nil
	})
	if err := sched.Add(ctx, job.Config{Name: "report", Cron: "*/2 * * * * *", ShardingTotalCount: 2}, report); err != nil {
		return err
	}

	// A script job: the command reads the item's span from TRACEPARENT;
	// its output goes to the log.
	export, err := script.New(script.Config{Shell: true, Command: []string{`echo "TRACEPARENT=$TRACEPARENT"`}})
	if err != nil {
		return err
	}
	if err := sched.Add(ctx, job.Config{Name: "export", Cron: "*/2 * * * * *", ShardingTotalCount: 1}, export); err != nil {
		return err
	}

	// An HTTP job calling a receiver in this process, which logs the
	// traceparent header it gets.
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slog.Info("receiver", "traceparent", r.Header.Get("traceparent"))
	}))
	defer receiver.Close()
	notify, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: receiver.URL + "/notify"})
	if err != nil {
		return err
	}
	if err := sched.Add(ctx, job.Config{Name: "notify", Cron: "*/2 * * * * *", ShardingTotalCount: 1}, notify); err != nil {
		return err
	}

	if err := sched.Start(ctx); err != nil {
		return err
	}
	slog.Info("running", "fires", fires)
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(time.Duration(fires)*2*time.Second + 30*time.Second):
		err = errors.New("the jobs did not fire in time")
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(err, sched.Shutdown(shutdownCtx))
}
