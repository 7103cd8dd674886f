// Command schedules shows what a job's config says about its schedule
// beyond the cron expression: overlap policies (replace, allow), a starting
// deadline, a window with a limit, excluded days, jitter, and a chain of
// three jobs each running after the one before (whose first fire's
// OpenTelemetry spans are printed as lines starting "trace:", one per
// span: the fire's and each item's). One instance, about 20 seconds.
//
// From the repository root:
//
//	make demo-schedules
//
// or
//
//	go run ./example/schedules                       # an embedded etcd: nothing to install
//	go run ./example/schedules -zk 127.0.0.1:2181    # a running ZooKeeper
//	go run ./example/schedules -etcd 127.0.0.1:2379  # a running etcd cluster
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/shardjob/shardjob/example/internal/demoreg"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

func main() {
	reg := demoreg.Register(nil)
	duration := flag.Duration("for", 20*time.Second, "how long to run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, reg, *duration); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "schedules demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, flags *demoreg.Flags, duration time.Duration) (err error) {
	reg, err := flags.Start(ctx, "shardjob-schedules-demo")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, reg.Close()) }()
	fmt.Println("registry:", reg)
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	rc, err := regcenter.Open(ctx, reg.Config(), regcenter.WithLogger(quiet))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rc.Close()) }()
	// The chain's first fire is traced: its spans are printed as lines
	// of their own, the other jobs' are dropped (chainSpans).
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(&chainSpans{}))
	defer func() { err = errors.Join(err, tp.Shutdown(context.Background())) }()
	sched, err := job.NewScheduler(rc, job.WithLogger(quiet), job.WithTracerProvider(tp), job.WithEventHandler(func(ev job.Event) {
		if ev.Kind == job.EventFiresExpired {
			say("%s: %d fire(s) older than the starting deadline dropped, not made up", ev.Job, ev.Units)
		}
	}))
	if err != nil {
		return err
	}
	start := time.Now()
	for _, j := range jobs(start) {
		if err := sched.Add(ctx, j.cfg, j.run); err != nil {
			return err
		}
		describe(j.cfg)
	}
	if err := sched.Start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-time.After(duration):
	}
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return sched.Shutdown(sctx)
}

type demoJob struct {
	cfg job.Config
	run job.Job
}

func jobs(now time.Time) []demoJob {
	var replaced, late, slow atomic.Bool
	var running atomic.Int32
	return []demoJob{
		{
			// A run that outlasts its period: the next fire cancels it
			// and runs instead of queueing behind it.
			cfg: job.Config{Name: "export", Cron: "*/3 * * * * *", ShardingTotalCount: 1, Overlap: job.OverlapReplace, Overwrite: true},
			run: job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
				if replaced.CompareAndSwap(false, true) {
					say("export: fire %s starts a run of 10s", clock(sc.FireTime))
					select {
					case <-ctx.Done():
						say("export: fire %s cancelled: %v", clock(sc.FireTime), context.Cause(ctx))
						return ctx.Err()
					case <-time.After(10 * time.Second):
					}
				}
				say("export: fire %s (%s) ran", clock(sc.FireTime), sc.Kind)
				return nil
			}),
		},
		{
			// Runs that are safe side by side (an unmonitored job): the
			// first lasts 4 s and the fires meanwhile run beside it.
			cfg: job.Config{Name: "warm-cache", Cron: "* * * * * *", ShardingTotalCount: 1, Overlap: job.OverlapAllow, Unmonitored: true, Overwrite: true},
			run: job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
				n := running.Add(1)
				defer running.Add(-1)
				if slow.CompareAndSwap(false, true) {
					say("warm-cache: fire %s starts a run of 4s", clock(sc.FireTime))
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(4 * time.Second):
					}
					say("warm-cache: fire %s's slow run ended", clock(sc.FireTime))
				} else if n > 1 {
					say("warm-cache: fire %s runs beside the slow one (%d runs at once)", clock(sc.FireTime), n)
				}
				return nil
			}),
		},
		{
			// Busy for 5 s: the fires it misses are made up by one run,
			// but only those within the last 2 s.
			cfg: job.Config{Name: "catch-up", Cron: "* * * * * *", ShardingTotalCount: 1, StartingDeadline: 2 * time.Second, Overwrite: true},
			run: job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
				if late.CompareAndSwap(false, true) {
					say("catch-up: fire %s runs for 5s", clock(sc.FireTime))
					time.Sleep(5 * time.Second)
					return nil
				}
				if sc.Kind != job.KindFire {
					say("catch-up: a %s run for fires %s..%s", sc.Kind, clock(sc.FireTime), clock(sc.Through))
				}
				return nil
			}),
		},
		{
			// Three fires from 4 s after start, then none.
			cfg: job.Config{Name: "three-times", Cron: "*/2 * * * * *", ShardingTotalCount: 1,
				Start: now.Add(4 * time.Second).Truncate(time.Second), Limit: 3, Overwrite: true},
			run: job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
				say("three-times: fire %s", clock(sc.FireTime))
				return nil
			}),
		},
		{
			// Every 5 s, up to 2 s late, the same delay on every instance.
			cfg: job.Config{Name: "jittered", Cron: "*/5 * * * * *", ShardingTotalCount: 1, Jitter: 2 * time.Second, Overwrite: true},
			run: job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
				say("jittered: fire %s (%v after the five-second mark)", clock(sc.FireTime), sc.FireTime.Sub(sc.FireTime.Truncate(5*time.Second)))
				return nil
			}),
		},
		// A chain: transform runs after extract has completed the same
		// fire on every item, load after transform.
		chainJob("extract", "", 3),
		chainJob("transform", "extract", 2),
		chainJob("load", "transform", 1),
		{
			// Never on today's weekday: its next fire is tomorrow.
			cfg: job.Config{Name: "not-today", Cron: "0 0 * * * *", ShardingTotalCount: 1,
				Exclude: strings.ToLower(now.Weekday().String()), Overwrite: true},
			run: job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
				say("not-today: fire %s", clock(sc.FireTime))
				return nil
			}),
		},
	}
}

// chainJob is a job of the chain, firing every 5 s: it works a little,
// so that the order shows.
func chainJob(name, after string, items int) demoJob {
	return demoJob{
		cfg: job.Config{Name: name, Cron: "*/5 * * * * *", ShardingTotalCount: items, After: after, Overwrite: true},
		run: job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
			time.Sleep(300 * time.Millisecond)
			say("chain: %-9s item %d of fire %s done", name, sc.Item, clock(sc.FireTime))
			return nil
		}),
	}
}

// chainSpans prints the spans of the chain's first fire, a line each
// (spanLine), and drops every other span.
type chainSpans struct {
	mu    sync.Mutex
	first time.Time
}

// ExportSpans prints the spans of the chain's first fire.
func (c *chainSpans) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	var keep []sdktrace.ReadOnlySpan
	c.mu.Lock()
	for _, sp := range spans {
		var name string
		var fire time.Time
		for _, kv := range sp.Attributes() {
			switch kv.Key {
			case job.AttrJob:
				name = kv.Value.AsString()
			case job.AttrFireTime:
				fire, _ = time.Parse(time.RFC3339Nano, kv.Value.AsString())
			}
		}
		if name != "extract" && name != "transform" && name != "load" {
			continue
		}
		if c.first.IsZero() {
			c.first = fire
		}
		if fire.Equal(c.first) {
			keep = append(keep, sp)
		}
	}
	c.mu.Unlock()
	for _, sp := range keep {
		say("%s", spanLine(sp))
	}
	return nil
}

// Shutdown does nothing: the spans are printed as they end.
func (c *chainSpans) Shutdown(context.Context) error { return nil }

// spanLine is one span as a line of the demo: "trace:", the job, the
// span's name and item, its length, and its trace, span and parent ids
// (their first 8 hex digits) to show which spans belong together.
func spanLine(sp sdktrace.ReadOnlySpan) string {
	name, item := "", ""
	for _, kv := range sp.Attributes() {
		switch kv.Key {
		case job.AttrJob:
			name = kv.Value.AsString()
		case job.AttrItem:
			item = fmt.Sprintf(" item %d", kv.Value.AsInt64())
		}
	}
	short := func(id string) string { return id[:8] }
	line := fmt.Sprintf("trace: %-9s %s%s, %v, trace %s span %s", name, sp.Name(), item,
		sp.EndTime().Sub(sp.StartTime()).Round(time.Millisecond), short(sp.SpanContext().TraceID().String()), short(sp.SpanContext().SpanID().String()))
	if sp.Parent().IsValid() {
		line += " in " + short(sp.Parent().SpanID().String())
	}
	if sp.Status().Code == codes.Error {
		line += " failed: " + sp.Status().Description
	}
	return line
}

func describe(c job.Config) {
	sched, loc, err := c.Schedule()
	if err != nil {
		return
	}
	next := sched.Next(time.Now())
	line := "no fire left"
	if !next.IsZero() {
		line = "next fire " + next.In(loc).Format("Mon 15:04:05.000")
	}
	say("%-11s cron %-16q %s", c.Name, c.Cron, line)
}

func clock(t time.Time) string { return t.Format("15:04:05.000") }

func say(format string, args ...any) {
	fmt.Printf(time.Now().Format("15:04:05.000")+"  "+format+"\n", args...)
}
