package benchkit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What every benchmark program does before and around its parts: parse
// its list flags, make its work directory, and print the machine it ran on.

// ParseInts parses a comma-separated list of positive integers ("1,10,100").
func ParseInts(s string) ([]int, error) {
	var r []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		r = append(r, n)
	}
	return r, nil
}

// ParseDurations parses a comma-separated list of positive durations
// ("4s,10s").
func ParseDurations(s string) ([]time.Duration, error) {
	var r []time.Duration
	for f := range strings.SplitSeq(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is not a positive duration", f)
		}
		r = append(r, d)
	}
	return r, nil
}

// JoinInts writes ns separated by sep ("1,2,3" with ",").
func JoinInts(ns []int, sep string) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, sep)
}

// WorkDir makes a temporary work directory named after prog and returns
// it with the call that removes it. With keep it is kept, and its path is
// printed on stderr for the reader of the logs.
func WorkDir(prog string, keep bool) (dir string, done func(), err error) {
	if dir, err = os.MkdirTemp("", prog+"-"); err != nil {
		return "", nil, err
	}
	if keep {
		fmt.Fprintln(os.Stderr, prog+": work directory", dir)
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// Machine describes the machine a benchmark runs on: CPUs, Go version,
// memory in GiB and the one-minute load average, for its "bench machine"
// line.
func Machine() *KV {
	k := new(KV).Add("cpus", runtime.NumCPU()).Add("go", runtime.Version())
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					if n, err := strconv.ParseFloat(f[0], 64); err == nil {
						k.Add("mem_gib", n/1024/1024)
					}
				}
			}
		}
	}
	return k.Add("load1", LoadAvg())
}

// LoadAvg returns the one-minute load average as /proc/loadavg writes it,
// or "?".
func LoadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(data)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// Main is a benchmark program's main function: it parses the program's
// arguments with parse (exit status 2 on a bad flag, 0 after -h), calls run
// with a context that SIGINT and SIGTERM end, and exits with status 1,
// after printing it, on run's error.
func Main[C any](prog string, parse func(args []string) (C, error), run func(context.Context, C) error) {
	cfg, err := parse(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, prog+":", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err = run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, prog+":", err)
		os.Exit(1)
	}
}
