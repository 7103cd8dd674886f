package main

import (
	"bufio"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// percentile returns the p-th percentile (0..100) of xs by the nearest-rank
// method, or NaN when xs is empty. xs need not be sorted; it is not changed.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// maxOf returns the largest of xs, or NaN when xs is empty.
func maxOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return slices.Max(xs)
}

// execRec is one execution an instance reported.
type execRec struct {
	inst    int    // index of the reporting instance
	job     string // job name
	item    int
	fire    int64 // scheduled fire time, unix ms
	entered int64 // Execute entered, unix ns
	kind    string
	// through is the latest fire the run stands for, unix ms: a make-up
	// run stands for every fire from fire through it (ShardingContext.Through).
	through int64
}

// latencyMS is the time from the scheduled fire to Execute entered.
func (e execRec) latencyMS() float64 {
	return float64(e.entered-e.fire*int64(time.Millisecond)) / float64(time.Millisecond)
}

// parseExecLine parses an instance's execution line
// "E <job> <item> <fire ms> <entered ns> <kind>".
func parseExecLine(line string) (execRec, error) {
	f := strings.Fields(line)
	if (len(f) != 6 && len(f) != 7) || f[0] != "E" {
		return execRec{}, fmt.Errorf("not an execution line: %q", line)
	}
	item, err := strconv.Atoi(f[2])
	if err != nil {
		return execRec{}, fmt.Errorf("item in %q: %w", line, err)
	}
	fire, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return execRec{}, fmt.Errorf("fire time in %q: %w", line, err)
	}
	entered, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil {
		return execRec{}, fmt.Errorf("entered time in %q: %w", line, err)
	}
	e := execRec{job: f[1], item: item, fire: fire, entered: entered, kind: f[5], through: fire}
	if len(f) == 7 {
		if e.through, err = strconv.ParseInt(f[6], 10, 64); err != nil || e.through < fire {
			return execRec{}, fmt.Errorf("through time in %q: %v", line, err)
		}
	}
	return e, nil
}

// parseMntr parses a mntr answer ("key<TAB>value" lines) into a map.
func parseMntr(s string) map[string]string {
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

// mntrInt returns a numeric mntr value.
func mntrInt(m map[string]string, key string) (int64, error) {
	v, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("mntr has no %s", key)
	}
	return strconv.ParseInt(v, 10, 64)
}

// parseWchs parses a wchs answer:
//
//	3 connections watching 12 paths
//	Total watches:14
func parseWchs(s string) (conns, paths, total int64, err error) {
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

// parseProcStatCPU returns utime+stime from the contents of /proc/PID/stat,
// in clock ticks. The command name (field 2) may contain spaces and
// parentheses, so fields are counted from the last ')'.
func parseProcStatCPU(stat string) (int64, error) {
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

// kv builds a "bench" line's key=value pairs.
type kv struct{ b strings.Builder }

func (k *kv) add(key string, v any) *kv {
	k.b.WriteByte(' ')
	k.b.WriteString(key)
	k.b.WriteByte('=')
	switch x := v.(type) {
	case float64:
		k.b.WriteString(fmtFloat(x))
	case time.Duration:
		k.b.WriteString(fmtFloat(float64(x) / float64(time.Millisecond)))
		k.b.WriteString("ms")
	case msVal:
		k.b.WriteString(fmtFloat(float64(x)))
		k.b.WriteString("ms")
	case string:
		if x == "" || strings.ContainsAny(x, " \t\"=") {
			k.b.WriteString(strconv.Quote(x))
		} else {
			k.b.WriteString(x)
		}
	default:
		fmt.Fprint(&k.b, x)
	}
	return k
}

func (k *kv) String() string { return k.b.String() }

// fmtFloat prints x with three significant decimals at most.
func fmtFloat(x float64) string {
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
