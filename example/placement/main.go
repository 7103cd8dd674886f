// Command placement shows the namespace-wide placement: 30 one-item jobs
// firing every second spread evenly over three instances, a fourth joining
// and taking units only from the others, an instance drained and given
// its units back, and the alarm an instance raises when it holds more
// units than its threshold. Every instance has its own registry session
// and server id, as separate processes would.
//
// From the repository root:
//
//	make demo-placement
//
// or
//
//	go run ./example/placement                       # an embedded etcd: nothing to install
//	go run ./example/placement -zk 127.0.0.1:2181    # a running ZooKeeper
//	go run ./example/placement -etcd 127.0.0.1:2379  # a running etcd cluster
//
// With neither flag the instances share one etcd member inside this
// process, its data in a temporary directory removed at the end.
//
// It takes about 40 seconds and stops early, cleanly, on Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/example/internal/demoreg"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

const (
	namespace = "shardjob-placement-demo"
	jobs      = 30
)

func main() {
	reg := demoreg.Register(nil)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, reg); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "placement demo:", err)
		os.Exit(1)
	}
}

// tally counts, per fire second, which instance ran each job, and holds
// the placement's events until the row they show in.
type tally struct {
	mu      sync.Mutex
	byFire  map[int64]map[string]string // fire → job → instance
	pending []string                    // events not yet on a row
	prev    string                      // the last row's runs per instance
}

// event notes ev for the next row whose runs differ from the row before:
// the row that shows what the event did (a drained instance gone from it,
// say) carries it.
func (t *tally) event(ev job.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending = append(t.pending, fmt.Sprintf("%s %s (units %d, threshold %d)", ev.Server, ev.Kind, ev.Units, ev.Threshold))
}

// flush returns the events no row has shown yet, a line each, and forgets
// them: the placement changed nothing a row shows before the next step.
func (t *tally) flush() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, ev := range t.pending {
		lines = append(lines, "          event: "+ev)
	}
	t.pending = nil
	return lines
}

func (t *tally) job(id string) job.Job {
	return job.SimpleFunc(func(_ context.Context, sc job.ShardingContext) error {
		t.mu.Lock()
		defer t.mu.Unlock()
		// A make-up run stands for every fire from FireTime to Through.
		for f := sc.FireTime.Unix(); f <= max(sc.Through.Unix(), sc.FireTime.Unix()); f++ {
			if t.byFire[f] == nil {
				t.byFire[f] = map[string]string{}
			}
			t.byFire[f][sc.JobName] = id
		}
		return nil
	})
}

// line renders the last complete second: runs per instance.
func (t *tally) line() string {
	return t.lineAt(time.Now().Add(-1500 * time.Millisecond).Unix())
}

// lineAt renders the fire second last: runs per instance, and the events
// noted since the last change when this row differs from the one before.
func (t *tally) lineAt(last int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	counts := map[string]int{}
	for _, who := range t.byFire[last] {
		counts[who]++
	}
	var parts []string
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for k := range counts {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, fmt.Sprintf("%s: %2d", id, counts[id]))
	}
	runs := strings.Join(parts, "   ")
	if runs == "" {
		runs = "(no run)"
	}
	line := time.Unix(last, 0).Format("15:04:05") + "  " + runs
	if runs != t.prev && len(t.pending) > 0 {
		line += "   <- " + strings.Join(t.pending, ", ")
		t.pending = nil
	}
	t.prev = runs
	return line
}

func run(ctx context.Context, flags *demoreg.Flags) (err error) {
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
	t := &tally{byFire: map[int64]map[string]string{}}
	var cfgs []job.Config
	for i := range jobs {
		cfgs = append(cfgs, job.Config{Name: fmt.Sprintf("report-%02d", i), Cron: "* * * * * *", ShardingTotalCount: 1})
	}
	type inst struct {
		rc    regcenter.Center
		sched *job.Scheduler
	}
	started := map[string]*inst{}
	defer func() {
		for _, in := range started {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = in.sched.Shutdown(sctx)
			cancel()
			in.rc.Close()
		}
	}()
	start := func(id string, opts ...job.Option) error {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		rc, err := regcenter.Open(sctx, rcConfig, regcenter.WithLogger(quiet))
		if err != nil {
			return err
		}
		opts = append([]job.Option{job.WithServerID(id), job.WithLogger(quiet)}, opts...)
		s, err := job.NewScheduler(rc, opts...)
		if err != nil {
			rc.Close()
			return err
		}
		for _, cfg := range cfgs {
			if err := s.Add(sctx, cfg, t.job(id)); err != nil {
				rc.Close()
				return err
			}
		}
		if err := s.Start(sctx); err != nil {
			rc.Close()
			return err
		}
		started[id] = &inst{rc, s}
		return nil
	}
	show := func(seconds int) error {
		for range seconds {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
			fmt.Println(t.line())
		}
		return nil
	}
	// Only the placement's own events are printed, each at the end of the
	// first row that shows a change after it: each of the 30 jobs also
	// reports being registered, led and resharded on every instance, which
	// would bury the story.
	events := job.WithEventHandler(func(ev job.Event) {
		switch ev.Kind {
		case job.EventAlarm, job.EventAlarmCleared, job.EventUnplaced, job.EventDraining, job.EventDrained, job.EventUndrained:
			t.event(ev)
		}
	})
	step := func(say string) {
		for _, line := range t.flush() {
			fmt.Println(line)
		}
		fmt.Println(">>> " + say)
	}

	step(fmt.Sprintf("%d one-item jobs, every second; instance-1 (alarm above 12 units), instance-2, instance-3 start.", jobs))
	if err := start("instance-1", job.WithAlarmThreshold(12), events); err != nil {
		return err
	}
	if err := show(2); err != nil {
		return nil
	}
	for _, id := range []string{"instance-2", "instance-3"} {
		if err := start(id, events); err != nil {
			return err
		}
	}
	if err := show(6); err != nil {
		return nil
	}
	step("instance-4 joins: it takes units from the others; none moves between the first three.")
	if err := start("instance-4", events); err != nil {
		return err
	}
	if err := show(6); err != nil {
		return nil
	}
	step("instance-2 is drained (shardjob drain instance-2): its units move to the others.")
	if err := job.Drain(ctx, started["instance-1"].rc, "instance-2"); err != nil {
		return err
	}
	if err := show(5); err != nil {
		return nil
	}
	step("instance-2 is undrained: it takes units again.")
	if err := job.Undrain(ctx, started["instance-1"].rc, "instance-2"); err != nil {
		return err
	}
	if err := show(5); err != nil {
		return nil
	}
	step("Shutting every instance down.")
	return nil
}
