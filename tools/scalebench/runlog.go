package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// runRec is one run an instance logged (instance/main.go, "R" lines).
type runRec struct {
	inst    int   // index of the logging instance
	job     int   // index of the job in the mix
	item    int   // the item
	fire    int64 // the earliest fire it stands for, unix ms
	through int64 // the latest fire it stands for, unix ms
	start   int64 // Execute entered, unix ns
	end     int64 // Execute returned, unix ns
	kind    string
}

// latencyMS is the time from the fire to Execute entered.
func (r runRec) latencyMS() float64 {
	return float64(r.start-r.fire*int64(time.Millisecond)) / float64(time.Millisecond)
}

// parseRunLine parses "R <job> <item> <fire ms> <through ms> <start ns>
// <end ns> <kind>"; jobIdx names the jobs.
func parseRunLine(line string, jobIdx map[string]int) (runRec, error) {
	f := strings.Fields(line)
	if len(f) != 8 || f[0] != "R" {
		return runRec{}, fmt.Errorf("not a run line: %q", line)
	}
	j, ok := jobIdx[f[1]]
	if !ok {
		return runRec{}, fmt.Errorf("unknown job in %q", line)
	}
	var n [5]int64
	for i := range n {
		v, err := strconv.ParseInt(f[2+i], 10, 64)
		if err != nil {
			return runRec{}, fmt.Errorf("field %d of %q: %w", 3+i, line, err)
		}
		n[i] = v
	}
	r := runRec{job: j, item: int(n[0]), fire: n[1], through: n[2], start: n[3], end: n[4], kind: internKind(f[7])}
	if r.through < r.fire || r.end < r.start || r.item < 0 {
		return runRec{}, fmt.Errorf("inconsistent run line %q", line)
	}
	return r, nil
}

// internKind returns a run's kind as a string of its own, not a slice of
// the line it came from, which would keep the line alive: the bench keeps
// millions of runs.
func internKind(k string) string {
	for _, known := range []string{"fire", "misfire", "failover", "trigger"} {
		if k == known {
			return known
		}
	}
	return strings.Clone(k)
}

// runBook holds every run the instances logged so far, read from their
// run logs as they grow.
type runBook struct {
	b       *bench
	offsets map[int]int64
	all     []runRec
	bad     int
}

func newRunBook(b *bench) *runBook { return &runBook{b: b, offsets: map[int]int64{}} }

// refresh reads what the run logs gained.
func (rb *runBook) refresh() error {
	for idx := range rb.b.cfg.instances {
		runs, off, bad, err := readRuns(rb.b.runLogPath(idx), rb.offsets[idx], idx, rb.b.jobIdx)
		rb.offsets[idx] = off
		rb.all = append(rb.all, runs...)
		rb.bad += bad
		if err != nil {
			return err
		}
	}
	return nil
}

// readRuns reads a run log from offset, returns its runs, the offset
// after the last whole line, and how many lines did not parse.
func readRuns(path string, offset int64, inst int, jobIdx map[string]int) ([]runRec, int64, int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, offset, 0, nil
	}
	if err != nil {
		return nil, offset, 0, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, 0, err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	var runs []runRec
	bad := 0
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			return runs, offset, bad, nil // a partial line waits for the next read
		}
		if err != nil {
			return runs, offset, bad, err
		}
		offset += int64(len(line))
		r, perr := parseRunLine(strings.TrimSuffix(line, "\n"), jobIdx)
		if perr != nil {
			bad++
			continue
		}
		r.inst = inst
		runs = append(runs, r)
	}
}

// itemKey names one item of one job.
type itemKey struct{ job, item int }

// overlap is two runs of one item that ran at once.
type overlap struct {
	key  itemKey
	a, b runRec
}

// findOverlaps returns every pair of runs of the same job and item whose
// [start, end] intervals intersect, on any instance: what "never run twice
// at once" forbids.
func findOverlaps(runs []runRec) []overlap {
	byItem := map[itemKey][]runRec{}
	for _, r := range runs {
		k := itemKey{r.job, r.item}
		byItem[k] = append(byItem[k], r)
	}
	var out []overlap
	for k, rs := range byItem {
		slices.SortFunc(rs, func(a, b runRec) int { return cmp.Compare(a.start, b.start) })
		// The run reaching furthest so far: any later start before its
		// end overlaps it.
		far := 0
		for i := 1; i < len(rs); i++ {
			if rs[i].start < rs[far].end {
				out = append(out, overlap{key: k, a: rs[far], b: rs[i]})
			}
			if rs[i].end > rs[far].end {
				far = i
			}
		}
	}
	slices.SortFunc(out, func(a, b overlap) int {
		return cmp.Or(cmp.Compare(a.key.job, b.key.job), cmp.Compare(a.key.item, b.key.item), cmp.Compare(a.b.start, b.b.start))
	})
	return out
}

// coverage is what the runs of the every-second jobs say of the fires of
// a window.
type coverage struct {
	fires int // item fires in the window: items × seconds
	lost  int // those no run stands for
	twice int // those two runs or more stand for
	// lostExamples names a few lost fires, "job/item@unix s".
	lostExamples []string
	// twiceKinds counts the fires run twice by the kinds of the runs.
	twiceKinds map[string]int
	// killed counts those of twice that a kill -9 explains: one run the
	// victim's, ended before the kill, another started after it — a
	// completion in flight at the kill (docs/guarantees.md); killedMS is
	// the longest any of those victim's runs had ended before the kill.
	killed   int
	killedMS float64
}

// killMark is a kill -9 a coverage check knows of: the victim's index
// and when (unix ns); inst -1: none.
type killMark struct {
	inst int
	at   int64
}

// noKill is a coverage check without a kill.
var noKill = killMark{inst: -1}

// checkCoverage checks, for every item of every job in fast (job index →
// items) and every whole second in [from, to] (unix ms), that a run
// stands for that fire: fire ≤ second ≤ through. jobName names a job for
// the examples. kill, when there was one, sorts the fires run twice
// across it (coverage.killed).
func checkCoverage(runs []runRec, fast map[int]int, from, to int64, jobName func(int) string, kill killMark) coverage {
	c := coverage{twiceKinds: map[string]int{}}
	byItem := map[itemKey][]runRec{}
	for _, r := range runs {
		if _, ok := fast[r.job]; !ok || r.through < from || r.fire > to {
			continue
		}
		k := itemKey{r.job, r.item}
		byItem[k] = append(byItem[k], r)
	}
	first := (from + 999) / 1000 * 1000
	jobs := make([]int, 0, len(fast))
	for j := range fast {
		jobs = append(jobs, j)
	}
	slices.Sort(jobs)
	for _, j := range jobs {
		for item := range fast[j] {
			rs := byItem[itemKey{j, item}]
			for s := first; s <= to; s += 1000 {
				c.fires++
				n := 0
				var kinds []string
				var victimEnd int64 // the victim's latest run of s ended before the kill
				after := false      // a run of s started after the kill
				for _, r := range rs {
					if r.fire <= s && s <= r.through {
						n++
						kinds = append(kinds, r.kind)
						switch {
						case kill.inst < 0:
						case r.inst == kill.inst && r.end <= kill.at:
							victimEnd = max(victimEnd, r.end)
						case r.start > kill.at:
							after = true
						}
					}
				}
				switch {
				case n == 0:
					c.lost++
					if len(c.lostExamples) < 5 {
						c.lostExamples = append(c.lostExamples, fmt.Sprintf("%s/%d@%d", jobName(j), item, s/1000))
					}
				case n > 1:
					c.twice++
					if victimEnd > 0 && after {
						c.killed++
						c.killedMS = max(c.killedMS, float64(kill.at-victimEnd)/float64(time.Millisecond))
					}
					slices.Sort(kinds)
					c.twiceKinds[strings.Join(kinds, "+")]++
				}
			}
		}
	}
	return c
}

// firstRuns returns, for every item of the jobs in fast, the earliest
// start (unix ns) of a run at or after since (unix ns), by an instance
// other than skip (-1: any).
func firstRuns(runs []runRec, fast map[int]int, since int64, skip int) map[itemKey]int64 {
	out := map[itemKey]int64{}
	for _, r := range runs {
		if _, ok := fast[r.job]; !ok || r.start < since || r.inst == skip {
			continue
		}
		k := itemKey{r.job, r.item}
		if t, ok := out[k]; !ok || r.start < t {
			out[k] = r.start
		}
	}
	return out
}
