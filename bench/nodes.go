package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardjob/shardjob/tools/benchkit"
	"github.com/shardjob/shardjob/tools/proc"
)

const nodePkg = "github.com/shardjob/shardjob/bench/node"

// node is one running node process and the file it records to.
type node struct {
	idx  int
	id   string
	out  string // its record file
	proc *proc.Proc
}

// startNode starts node idx with args (the system's flags); its records go
// to dir/{id}.rec, its stderr to dir/{id}.log.
func (b *bench) startNode(dir string, idx int, id string, args []string) (*node, error) {
	n := &node{idx: idx, id: id, out: filepath.Join(dir, id+".rec")}
	logf, err := os.Create(filepath.Join(dir, id+".log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	base := []string{"-id", id, "-out", n.out}
	if b.cfg.nodeVerbose {
		base = append(base, "-v")
	}
	if b.cfg.nodeProfile {
		base = append(base, "-cpuprofile", filepath.Join(dir, id+".cpu.pprof"))
	}
	cmd := exec.Command(b.nodeBin, append(base, args...)...)
	cmd.Stderr = logf
	if n.proc, err = proc.Start(id, cmd, nil); err != nil {
		return nil, err
	}
	return n, nil
}

// stopNodes stops every node still running, concurrently, and waits for
// them (each within 10 s of SIGTERM, then SIGKILL).
func (b *bench) stopNodes(ns []*node) {
	var wg sync.WaitGroup
	for _, n := range ns {
		wg.Go(func() {
			if err := n.proc.Stop(10 * time.Second); err != nil {
				b.log.Warn("stop node", "err", err)
			}
		})
	}
	wg.Wait()
}

// runRec is one run a node recorded.
type runRec struct {
	node    int
	job     string
	item    int
	fire    int64 // scheduled fire, unix ms; -1 when the system does not say
	start   int64 // run started, unix ns
	kind    string
	through int64 // the last fire the run stands for, unix ms; -1 when unknown
}

// tick is the tick the run belongs to, unix ms: its scheduled fire, or,
// for a system that does not report it, the start time's second (every
// job fires on every second, and no run is a second late in the systems
// that do not report it unless their latency shows it).
func (r runRec) tick() int64 {
	if r.fire >= 0 {
		return r.fire
	}
	return r.start / int64(time.Second) * 1000
}

// last is the last tick the run stands for, unix ms.
func (r runRec) last() int64 {
	if r.through >= 0 {
		return r.through
	}
	return r.tick()
}

// latencyMS is the time from the tick to the run's start.
func (r runRec) latencyMS() float64 {
	return float64(r.start-r.tick()*int64(time.Millisecond)) / float64(time.Millisecond)
}

// records is what a node's file holds so far.
type records struct {
	started int64 // unix ns, 0 if not yet
	runs    []runRec
	cost    *nodeCost // the C line of a -count-only node, once written
	bad     int       // lines that did not parse (a line cut by the kill)
}

// nodeCost is a -count-only node's own cost over its measured window.
type nodeCost struct {
	runs, cpuNS        int64
	mallocs, allocs    uint64
	requests, writeOps int64 // shardjob's registry client's; 0 for the others
}

// readRecords reads node n's file.
func readRecords(n *node) (records, error) {
	var r records
	f, err := os.Open(n.out)
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) == 2 && fs[0] == "S":
			if r.started, err = strconv.ParseInt(fs[1], 10, 64); err != nil {
				r.bad++
			}
		case len(fs) == 7 && fs[0] == "R":
			rec := runRec{node: n.idx, job: fs[1], kind: fs[5]}
			var e1, e2, e3, e4 error
			rec.item, e1 = strconv.Atoi(fs[2])
			rec.fire, e2 = strconv.ParseInt(fs[3], 10, 64)
			rec.start, e3 = strconv.ParseInt(fs[4], 10, 64)
			rec.through, e4 = strconv.ParseInt(fs[6], 10, 64)
			if errors.Join(e1, e2, e3, e4) != nil {
				r.bad++
				continue
			}
			r.runs = append(r.runs, rec)
		case len(fs) == 7 && fs[0] == "C":
			var c nodeCost
			var e1, e2, e3, e4, e5, e6 error
			c.runs, e1 = strconv.ParseInt(fs[1], 10, 64)
			c.cpuNS, e2 = strconv.ParseInt(fs[2], 10, 64)
			c.mallocs, e3 = strconv.ParseUint(fs[3], 10, 64)
			c.allocs, e4 = strconv.ParseUint(fs[4], 10, 64)
			c.requests, e5 = strconv.ParseInt(fs[5], 10, 64)
			c.writeOps, e6 = strconv.ParseInt(fs[6], 10, 64)
			if errors.Join(e1, e2, e3, e4, e5, e6) != nil {
				r.bad++
				continue
			}
			r.cost = &c
		default:
			r.bad++
		}
	}
	return r, sc.Err()
}

// readAll reads every node's file.
func readAll(ns []*node) ([]records, error) {
	out := make([]records, len(ns))
	for i, n := range ns {
		r, err := readRecords(n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.id, err)
		}
		out[i] = r
	}
	return out, nil
}

// waitFor calls cond every interval until it returns true, ctx ends or
// limit passes.
func waitFor(ctx context.Context, limit, interval time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if err := benchkit.SleepCtx(ctx, interval); err != nil {
			return err
		}
	}
}

// sleepUntil sleeps until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error { return benchkit.SleepCtx(ctx, time.Until(t)) }

// cpuOf returns each pid's CPU so far, in seconds; a pid that is gone
// reads as NaN-free zero and err says which.
func cpuOf(pids ...int) ([]float64, error) {
	r := make([]float64, len(pids))
	var errs []error
	for i, pid := range pids {
		s, err := benchkit.CPUSeconds(pid)
		if err != nil {
			errs = append(errs, fmt.Errorf("cpu of pid %d: %w", pid, err))
		}
		r[i] = s
	}
	return r, errors.Join(errs...)
}
