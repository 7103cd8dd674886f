package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/shardjob/shardjob/tools/benchkit"
	"github.com/shardjob/shardjob/tools/proc"
)

const instancePkg = "github.com/shardjob/shardjob/tools/firebench/instance"

// buildInstance builds the instance program into dir.
func buildInstance(ctx context.Context, dir string) (string, error) {
	return proc.BuildProgram(ctx, instancePkg, dir, "instance")
}

// collector gathers the executions every instance reports.
type collector struct {
	mu    sync.Mutex
	execs []execRec
	bad   int // lines that did not parse
}

func (c *collector) add(e execRec) {
	c.mu.Lock()
	c.execs = append(c.execs, e)
	c.mu.Unlock()
}

// snapshot returns the executions so far.
func (c *collector) snapshot() []execRec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]execRec(nil), c.execs...)
}

// inst is one running instance process.
type inst struct {
	idx int
	id  string
	*proc.Proc
	ready chan struct{} // closed when the process printed READY
	// readyAt is when READY was read (its Start had returned): set before
	// ready is closed, read after.
	readyAt time.Time
}

// instSpec says what the instance processes run.
type instSpec struct {
	namespace      string
	jobs, items    int
	cron           string
	failover       bool
	sessionTimeout time.Duration
}

// startInst starts instance idx running spec. Its executions go to col,
// its stderr to dir/{id}.log.
func (b *bench) startInst(idx int, spec instSpec, col *collector) (*inst, error) {
	id := fmt.Sprintf("%s-i%d", spec.namespace, idx)
	args := append(b.reg.InstanceArgs(),
		"-id", id,
		"-namespace", spec.namespace,
		"-jobs", strconv.Itoa(spec.jobs),
		"-items", strconv.Itoa(spec.items),
		"-cron", spec.cron,
		"-session-timeout", spec.sessionTimeout.String(),
	)
	if spec.failover {
		args = append(args, "-failover")
	}
	if b.cfg.trace {
		args = append(args, "-trace")
	}
	if b.cfg.instVerbose {
		args = append(args, "-v")
	}
	if b.cfg.instProfile {
		args = append(args, "-cpuprofile", filepath.Join(b.dir, id+".cpu.pprof"))
	}
	if b.cfg.instLateTrace > 0 {
		args = append(args, "-late-trace", filepath.Join(b.dir, id+".late.trace"), "-late-trace-after", b.cfg.instLateTrace.String(),
			"-late-trace-from", b.cfg.instLateTraceFrom.String())
	}
	cmd := exec.Command(b.instanceBin, args...)
	logf, err := os.OpenFile(filepath.Join(b.dir, id+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd.Stderr = logf
	in := &inst{idx: idx, id: id, ready: make(chan struct{})}
	if in.Proc, err = proc.Start(id, cmd, func(r io.Reader) { in.read(r, col) }); err != nil {
		return nil, err
	}
	b.log.Debug("instance started", "id", id, "pid", in.PID())
	return in, nil
}

// read consumes the instance's stdout until it closes.
func (in *inst) read(r io.Reader, col *collector) {
	sc := bufio.NewScanner(r)
	readySeen := false
	for sc.Scan() {
		line := sc.Text()
		if line == "READY" {
			if !readySeen {
				readySeen = true
				in.readyAt = time.Now()
				close(in.ready)
			}
			continue
		}
		e, err := parseExecLine(line)
		if err != nil {
			col.mu.Lock()
			col.bad++
			col.mu.Unlock()
			continue
		}
		e.inst = in.idx
		col.add(e)
	}
}

// startInstances starts n instances and waits until all are ready.
func (b *bench) startInstances(ctx context.Context, n int, spec instSpec, col *collector) ([]*inst, error) {
	var ins []*inst
	for i := range n {
		in, err := b.startInst(i, spec, col)
		if err != nil {
			b.stopAll(ins)
			return nil, err
		}
		ins = append(ins, in)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, in := range ins {
		select {
		case <-in.ready:
		case <-in.Done():
			b.stopAll(ins)
			return nil, fmt.Errorf("%s exited before it was ready (%v); see %s", in.id, in.Err(), filepath.Join(b.dir, in.id+".log"))
		case <-ctx.Done():
			b.stopAll(ins)
			return nil, fmt.Errorf("%s not ready: %w", in.id, ctx.Err())
		}
	}
	return ins, nil
}

// stopAll stops every instance still running, concurrently, and waits for
// them.
func (b *bench) stopAll(ins []*inst) {
	var wg sync.WaitGroup
	for _, in := range ins {
		wg.Go(func() {
			if err := in.Stop(10 * time.Second); err != nil {
				b.log.Warn("stop instance", "err", err)
			}
		})
	}
	wg.Wait()
}

// cpuSum returns the CPU of several processes together, in seconds.
func cpuSum(pids []int) (float64, error) {
	var sum int64
	for _, pid := range pids {
		t, err := benchkit.CPUTicks(pid)
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return float64(sum) / benchkit.ClockTicks, nil
}

// cpuEach returns each process's CPU so far, in seconds.
func cpuEach(pids []int) ([]float64, error) {
	r := make([]float64, len(pids))
	for i, pid := range pids {
		t, err := benchkit.CPUTicks(pid)
		if err != nil {
			return nil, err
		}
		r[i] = float64(t) / benchkit.ClockTicks
	}
	return r, nil
}

// packetsReceived returns what the server counts as received so far
// (registry.Registry.ServerRequests).
func (b *bench) packetsReceived(ctx context.Context) (int64, error) {
	return b.reg.ServerRequests(ctx)
}

// watchTotal returns the server's total watch count
// (registry.Registry.ServerWatches).
func (b *bench) watchTotal(ctx context.Context) (int64, error) {
	return b.reg.ServerWatches(ctx)
}

// sleepUntil sleeps until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error { return benchkit.SleepCtx(ctx, time.Until(t)) }
