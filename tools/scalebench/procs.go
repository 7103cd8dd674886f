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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/tools/proc"
)

const instancePkg = "github.com/shardjob/shardjob/tools/scalebench/instance"

// buildInstance builds the instance program into dir.
func buildInstance(ctx context.Context, dir string) (string, error) {
	return proc.BuildProgram(ctx, instancePkg, dir, "instance")
}

// inst is one running instance process.
type inst struct {
	idx int
	id  string
	*proc.Proc
	// lines carries the protocol's lines (STARTED, STATS, HEAP) from the
	// reading goroutine, which ends with the process's stdout.
	lines chan string
	// launched is when the process was started.
	launched time.Time
}

// runLogPath is instance idx's run log: every process of that index,
// restarted or not, appends to it.
func (b *bench) runLogPath(idx int) string { return filepath.Join(b.dir, fmt.Sprintf("i%d.runs", idx)) }

// instID is instance idx's server id, kept across restarts.
func instID(idx int) string { return fmt.Sprintf("i%d", idx) }

// startInst starts instance idx. Its stderr goes to dir/{id}.log.
func (b *bench) startInst(idx int) (*inst, error) {
	id := instID(idx)
	args := append(b.reg.InstanceArgs(),
		"-id", id,
		"-namespace", b.cfg.namespace,
		"-jobs", strconv.Itoa(b.cfg.jobs),
		"-seed", strconv.FormatUint(b.cfg.seed, 10),
		"-fast-pct", strconv.FormatFloat(b.cfg.fastPct, 'g', -1, 64),
		"-runlog", b.runLogPath(idx),
		"-session-timeout", b.cfg.sessionTimeout.String(),
		"-start-timeout", b.cfg.regDeadline.String(),
		"-shutdown-timeout", b.cfg.shutdownTimeout.String(),
	)
	if b.cfg.profile {
		n := b.starts[idx]
		args = append(args, "-cpuprofile", filepath.Join(b.dir, fmt.Sprintf("%s.%d.cpu.pprof", id, n)),
			"-heapprofile", filepath.Join(b.dir, fmt.Sprintf("%s.%d.heap.pprof", id, n)))
	}
	if b.cfg.instVerbose {
		args = append(args, "-v")
	}
	b.starts[idx]++
	cmd := exec.Command(b.bin, args...)
	logf, err := os.OpenFile(filepath.Join(b.dir, id+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd.Stderr = logf
	in := &inst{idx: idx, id: id, lines: make(chan string, 64), launched: time.Now()}
	if in.Proc, err = proc.Start(id, cmd, in.read); err != nil {
		return nil, err
	}
	b.log.Debug("instance started", "id", id, "pid", in.PID())
	return in, nil
}

// read passes the instance's stdout lines on until it closes, then closes
// lines.
func (in *inst) read(r io.Reader) {
	defer close(in.lines)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		in.lines <- sc.Text()
	}
}

// await waits for the instance's next line starting with prefix, up to
// ctx's end, and returns its key=value pairs.
func (in *inst) await(ctx context.Context, prefix string) (map[string]int64, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: no %s line: %w", in.id, prefix, ctx.Err())
		case l, ok := <-in.lines:
			if !ok {
				<-in.Done()
				return nil, fmt.Errorf("%s exited before its %s line (%v)", in.id, prefix, in.Err())
			}
			rest, found := strings.CutPrefix(l, prefix+" ")
			if !found {
				continue
			}
			return parseKV(rest)
		}
	}
}

// ask sends sig and waits, up to d, for the line with prefix it answers.
func (in *inst) ask(ctx context.Context, sig syscall.Signal, prefix string, d time.Duration) (map[string]int64, error) {
	if err := in.Signal(sig); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return in.await(ctx, prefix)
}

// parseKV parses "k=1 k2=2".
func parseKV(s string) (map[string]int64, error) {
	m := map[string]int64{}
	for f := range strings.FieldsSeq(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("no '=' in %q", f)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", f, err)
		}
		m[k] = n
	}
	return m, nil
}

// askAll asks every live instance at once and returns the answers by
// index; an instance that does not answer is an error.
func (b *bench) askAll(ctx context.Context, sig syscall.Signal, prefix string, d time.Duration) ([]map[string]int64, error) {
	out := make([]map[string]int64, len(b.insts))
	errs := make([]error, len(b.insts))
	var wg sync.WaitGroup
	for i, in := range b.insts {
		if in == nil || !in.Alive() {
			continue
		}
		wg.Go(func() { out[i], errs[i] = in.ask(ctx, sig, prefix, d) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// stopAll kills every instance still running, concurrently, and waits for
// them.
func (b *bench) stopAll() {
	var wg sync.WaitGroup
	for _, in := range b.insts {
		if in == nil {
			continue
		}
		wg.Go(func() {
			if err := in.Kill(); err != nil {
				b.log.Warn("kill instance", "err", err)
			}
		})
	}
	wg.Wait()
}
