package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/tools/chaos/eventlog"
)

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// runMain is the command: 0 when the invariants held, 1 when the analysis
// found overlaps or lost fires, 2 when the run could not be carried out.
func runMain(args []string, stdout, stderr io.Writer) int {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Registry, "registry", cfg.Registry, "the registry the instances coordinate through: "+strings.Join(registries, " or "))
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to inject faults (the first round of every fault kind always completes)")
	fs.IntVar(&cfg.Instances, "instances", cfg.Instances, "instance processes")
	fs.IntVar(&cfg.Items, "items", cfg.Items, "sharding items of the test job")
	fs.DurationVar(&cfg.Work, "work", cfg.Work, "how long an execution works")
	fs.DurationVar(&cfg.Jitter, "jitter", cfg.Jitter, "random ± on -work")
	fs.DurationVar(&cfg.RecordInterval, "record-interval", cfg.RecordInterval, "the instances' job.WithRecordInterval: a duplicate a crash explains must have run within this long (plus a run and two periods) before it")
	fs.DurationVar(&cfg.SessionTimeout, "session-timeout", cfg.SessionTimeout, "the instances' session timeout: ZooKeeper's, or etcd's lease TTL (1s..4s)")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "an instance's graceful shutdown deadline")
	seed := fs.Int64("seed", 0, "fault schedule seed (0: from the clock)")
	fs.BoolVar(&cfg.Race, "race", cfg.Race, "build the instances with -race (default: as this binary was built)")
	fs.BoolVar(&cfg.Partition, "partition", cfg.Partition, "run the network partition fault (needs root and ip netns)")
	faults := fs.String("faults", "", "fault kinds to inject, comma-separated (default: every kind of the registry: "+
		strings.Join(faultsFor(registryZooKeeper), ",")+" on zookeeper; "+strings.Join(faultsFor(registryEtcd), ",")+" on etcd; "+strings.Join(faultsFor(registryPostgres), ",")+" on postgres)")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "after start-up: fires not checked, no fault")
	fs.DurationVar(&cfg.Settle, "settle", cfg.Settle, "quiet time after the last fault, before the instances are stopped")
	fs.DurationVar(&cfg.Cooldown, "cooldown", cfg.Cooldown, "before the stop: fires not checked")
	fs.StringVar(&cfg.Dir, "dir", "", "run directory, kept (default: a temporary one, removed when the run passes)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the temporary run directory even when the run passes")
	fs.StringVar(&cfg.InstanceBin, "instance-bin", "", "prebuilt instance program (default: go build "+instancePkg+")")
	fs.BoolVar(&cfg.Verbose, "v", false, "debug logging in the instances' logs")
	fs.StringVar(&cfg.Overlap, "overlap", "", `the test job's overlap policy: "" (buffer one run) or replace (use with -work shorter than the 1 s period and -long-every)`)
	fs.IntVar(&cfg.LongEvery, "long-every", 0, "every this many executions of an instance works -long instead of -work (0: none)")
	fs.DurationVar(&cfg.Long, "long", 3*time.Second, "how long a long execution works (see -long-every)")
	fs.IntVar(&cfg.FailEvery, "fail-every", 0, "every this many executions of an instance fails at its first attempt, and the jobs retry failed runs (0: none)")
	fs.BoolVar(&cfg.Backfill, "backfill", false, "start a backfill of the first job a quarter into the faults, over the last 30 fires, and check it ran each fire once on every item")
	fs.IntVar(&cfg.Chain, "chain", 1, "jobs the instances run, each after the one before (1..5); the analysis checks each and their order")
	fs.DurationVar(&cfg.FireJitter, "fire-jitter", cfg.FireJitter, "the jobs' schedule jitter (job.Config.Jitter), under 500ms; negative: 300ms with -chain above 1, none for one job")
	analyse := fs.String("analyse", "", "only analyse this event log of an earlier run")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "chaos: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *seed != 0 {
		cfg.Seed = *seed
	}
	cfg.Faults = nil
	for _, f := range strings.Split(*faults, ",") {
		if f = strings.TrimSpace(f); f != "" {
			cfg.Faults = append(cfg.Faults, f)
		}
	}
	cfg.Out = stdout

	var rep *Report
	if *analyse != "" {
		events, bad, err := eventlog.ReadFile(*analyse)
		if err != nil {
			fmt.Fprintln(stderr, "chaos:", err)
			return 2
		}
		if rep, err = Analyse(events, AnalyseOptions{}); err != nil {
			fmt.Fprintln(stderr, "chaos:", err)
			return 2
		}
		rep.BadLines += bad
	} else {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		var err error
		rep, err = Run(ctx, cfg)
		if err != nil {
			fmt.Fprintln(stderr, "chaos:", err)
			return 2
		}
	}
	rep.Details(stdout)
	fmt.Fprintln(stdout, rep.Summary())
	if !rep.OK() {
		return 1
	}
	return 0
}
