// Package benchkit holds what shardjob's benchmark programs share: sample
// statistics, the "bench NAME key=value ..." line format, CPU times read
// from /proc, ZooKeeper's four-letter words, and process groups that die
// with the benchmark. It is used by tools/firebench and by the separate
// bench module (github.com/shardjob/shardjob/bench), whose import path lies
// under this module's, so the internal rule lets it in.
package benchkit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ClockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's CPU
// times: 100 on every Linux architecture Go supports.
const ClockTicks = 100

// Percentile returns the p-th percentile (0..100) of xs by the nearest-rank
// method, or NaN when xs is empty. xs need not be sorted; it is not changed.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// Max returns the largest of xs, or NaN when xs is empty.
func Max(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return slices.Max(xs)
}

// MS is a time in milliseconds, printed by KV with an "ms" suffix.
type MS float64

// KV builds a "bench" line's key=value pairs. The zero value is ready.
type KV struct {
	b     strings.Builder
	pairs []Pair
}

// Pair is one key=value of a KV, its value as printed.
type Pair struct{ Key, Value string }

// Add appends " key=value". Floats are printed with at most three
// decimals (FmtFloat); durations and MS values in milliseconds with an
// "ms" suffix; strings with spaces, quotes or '=' are quoted.
func (k *KV) Add(key string, v any) *KV {
	var val string
	switch x := v.(type) {
	case float64:
		val = FmtFloat(x)
	case time.Duration:
		val = FmtFloat(float64(x)/float64(time.Millisecond)) + "ms"
	case MS:
		val = FmtFloat(float64(x)) + "ms"
	case string:
		val = x
		if x == "" || strings.ContainsAny(x, " \t\"=") {
			val = strconv.Quote(x)
		}
	default:
		val = fmt.Sprint(x)
	}
	k.b.WriteByte(' ')
	k.b.WriteString(key)
	k.b.WriteByte('=')
	k.b.WriteString(val)
	k.pairs = append(k.pairs, Pair{Key: key, Value: val})
	return k
}

// String returns the pairs added so far, each preceded by a space.
func (k *KV) String() string { return k.b.String() }

// Pairs returns the pairs added so far, in order.
func (k *KV) Pairs() []Pair { return slices.Clone(k.pairs) }

// Table writes a Markdown table with a row per key and a column per head:
// cols[i] holds column heads[i]'s pairs. Keys come in the order they first
// appear; a key a column lacks is "—"; a key added twice to one column
// keeps its last value.
func Table(heads []string, cols [][]Pair) string {
	var keys []string
	vals := make([]map[string]string, len(cols))
	for i, c := range cols {
		vals[i] = map[string]string{}
		for _, p := range c {
			if !slices.Contains(keys, p.Key) {
				keys = append(keys, p.Key)
			}
			vals[i][p.Key] = p.Value
		}
	}
	var b strings.Builder
	b.WriteString("| figure |")
	for _, h := range heads {
		b.WriteString(" " + h + " |")
	}
	b.WriteString("\n| --- |" + strings.Repeat(" --- |", len(heads)) + "\n")
	for _, k := range keys {
		b.WriteString("| " + k + " |")
		for i := range heads {
			v := "—"
			if i < len(vals) {
				if got, ok := vals[i][k]; ok {
					v = got
				}
			}
			b.WriteString(" " + v + " |")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// FmtFloat prints x with three significant decimals at most.
func FmtFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 0):
		return "inf"
	case math.Abs(x) >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case math.Abs(x) >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
}

// ParseProcStatCPU returns utime+stime from the contents of /proc/PID/stat,
// in clock ticks. The command name (field 2) may contain spaces and
// parentheses, so fields are counted from the last ')'.
func ParseProcStatCPU(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short stat %q", stat)
	}
	u, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return u + s, nil
}

// CPUTicks returns a process's user+system CPU so far, in clock ticks.
func CPUTicks(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return ParseProcStatCPU(string(data))
}

// CPUSeconds returns a process's user+system CPU so far, in seconds.
func CPUSeconds(pid int) (float64, error) {
	t, err := CPUTicks(pid)
	return float64(t) / ClockTicks, err
}

// ParseMntr parses a mntr answer ("key<TAB>value" lines) into a map.
func ParseMntr(s string) map[string]string {
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// MntrInt returns a numeric mntr value.
func MntrInt(m map[string]string, key string) (int64, error) {
	v, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("mntr has no %s", key)
	}
	return strconv.ParseInt(v, 10, 64)
}

// ParseWchs parses a wchs answer:
//
//	3 connections watching 12 paths
//	Total watches:14
func ParseWchs(s string) (conns, paths, total int64, err error) {
	var seen int
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if n, _ := fmt.Sscanf(line, "%d connections watching %d paths", &conns, &paths); n == 2 {
			seen++
		}
		if v, ok := strings.CutPrefix(line, "Total watches:"); ok {
			if total, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
				return 0, 0, 0, fmt.Errorf("wchs total in %q: %w", line, err)
			}
			seen++
		}
	}
	if seen != 2 {
		return 0, 0, 0, fmt.Errorf("unexpected wchs answer %q", s)
	}
	return conns, paths, total, nil
}

// SleepCtx sleeps for d or until ctx ends, and returns ctx's error if it
// ended first.
func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ParseStatusRSS returns VmRSS from the contents of /proc/PID/status, in
// bytes.
func ParseStatusRSS(status string) (int64, error) {
	for line := range strings.SplitSeq(status, "\n") {
		v, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("malformed VmRSS line %q", line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS in %q: %w", line, err)
		}
		return n * 1024, nil
	}
	return 0, errors.New("no VmRSS in the status (a process that has exited)")
}

// RSS returns a process's resident memory in bytes.
func RSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return ParseStatusRSS(string(data))
}

// Logger is a benchmark program's logger on stderr: warnings and errors,
// or with verbose everything down to debug.
func Logger(verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// CPUProfile starts a CPU profile of this process into the file path and
// returns what stops it and closes the file; with path empty, it does
// nothing.
func CPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// HeapProfile writes this process's heap profile into the file path.
func HeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}
