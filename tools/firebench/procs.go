package main

import (
	"github.com/shardjob/shardjob/tools/benchkit"

	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const instancePkg = "github.com/shardjob/shardjob/tools/firebench/instance"

// buildInstance builds the instance program into dir.
func buildInstance(ctx context.Context, dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		if root := os.Getenv("GOROOT"); root != "" {
			goBin = filepath.Join(root, "bin", "go")
		} else {
			return "", errors.New("the go command is not in PATH (or pass -instance-bin)")
		}
	}
	modDir, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "instance")
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, instancePkg)
	cmd.Dir = modDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", instancePkg, err, out)
	}
	return bin, nil
}

// moduleRoot finds the shardjob module's directory at or above the working
// directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/shardjob/shardjob\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the shardjob module (run from its checkout, or pass -instance-bin)")
		}
		dir = parent
	}
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
	idx   int
	id    string
	cmd   *exec.Cmd
	pid   int
	ready chan struct{} // closed when the process printed READY
	done  chan struct{} // closed once the process is reaped
	err   error         // the process's exit; read after done
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
	args := []string{
		"-id", id,
		"-servers", strings.Join(b.zk.Servers(), ","),
		"-namespace", spec.namespace,
		"-jobs", strconv.Itoa(spec.jobs),
		"-items", strconv.Itoa(spec.items),
		"-cron", spec.cron,
		"-session-timeout", spec.sessionTimeout.String(),
	}
	if spec.failover {
		args = append(args, "-failover")
	}
	cmd := exec.Command(b.instanceBin, args...)
	// Own process group, and killed by the kernel if the benchmark dies, so
	// that no instance outlives it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	logf, err := os.OpenFile(filepath.Join(b.dir, id+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", id, err)
	}
	in := &inst{idx: idx, id: id, cmd: cmd, pid: cmd.Process.Pid, ready: make(chan struct{}), done: make(chan struct{})}
	b.log.Debug("instance started", "id", id, "pid", in.pid)
	go func() {
		defer close(in.done)
		defer logf.Close()
		in.read(stdout, col)
		in.err = cmd.Wait()
	}()
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
	// Drain whatever is left so that the process never blocks on a full
	// pipe; a scanner error (a line too long) ends up here.
	_, _ = io.Copy(io.Discard, r)
}

func (in *inst) alive() bool {
	select {
	case <-in.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to the instance's process group and waits, up to 10s,
// until it is reaped.
func (in *inst) kill() error {
	if err := syscall.Kill(-in.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGKILL %s: %w", in.id, err)
	}
	return in.wait(10 * time.Second)
}

// stop asks the instance to shut down (SIGTERM) and kills it if it has not
// exited within grace.
func (in *inst) stop(grace time.Duration) error {
	if !in.alive() {
		return nil
	}
	if err := syscall.Kill(-in.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGTERM %s: %w", in.id, err)
	}
	if in.wait(grace) == nil {
		return nil
	}
	return in.kill()
}

func (in *inst) wait(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-in.done:
		return nil
	case <-t.C:
		return fmt.Errorf("%s (pid %d) not reaped %v after the signal", in.id, in.pid, d)
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
		case <-in.done:
			b.stopAll(ins)
			return nil, fmt.Errorf("%s exited before it was ready (%v); see %s", in.id, in.err, filepath.Join(b.dir, in.id+".log"))
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
			if err := in.stop(10 * time.Second); err != nil {
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

// packetsReceived returns the server's zk_packets_received.
func (b *bench) packetsReceived(ctx context.Context) (int64, error) {
	ans, err := benchkit.FourLetter(ctx, b.zk.Servers()[0], "mntr")
	if err != nil {
		return 0, err
	}
	return benchkit.MntrInt(benchkit.ParseMntr(ans), "zk_packets_received")
}

// watchTotal returns the server's total watch count (wchs).
func (b *bench) watchTotal(ctx context.Context) (int64, error) {
	ans, err := benchkit.FourLetter(ctx, b.zk.Servers()[0], "wchs")
	if err != nil {
		return 0, err
	}
	_, _, total, err := benchkit.ParseWchs(ans)
	return total, err
}

// sleepUntil sleeps until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error { return benchkit.SleepCtx(ctx, time.Until(t)) }
