package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/tools/chaos/eventlog"
	"github.com/shardjob/shardjob/tools/proc"
)

// readyLine is what an instance prints on stdout once its scheduler runs.
const readyLine = "READY"

// instance is one instance: a server id, and the process currently
// running it (a new one after each restart).
type instance struct {
	id      string
	inNetns bool

	mu      sync.Mutex
	current *proc.Proc    // nil before the first start
	ready   chan struct{} // closed once the current process printed readyLine
	exited  chan struct{} // closed once the harness logged the current process's exit
	frozen  bool
}

// state returns the current process, its channels and whether it is
// stopped (SIGSTOP).
func (p *instance) state() (cur *proc.Proc, done, ready <-chan struct{}, frozen bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current == nil {
		return nil, nil, nil, false
	}
	return p.current, p.exited, p.ready, p.frozen
}

// alive reports whether a process runs for p (frozen or not).
func (p *instance) alive() bool {
	_, done, _, _ := p.state()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// start launches a new process for p. The harness writes an Exit event when
// it is reaped.
func (h *harness) start(p *instance) error {
	if p.alive() {
		return fmt.Errorf("%s already runs", p.id)
	}
	servers := h.servers
	if p.inNetns {
		servers = h.nsServers
	}
	args := []string{
		"-id", p.id,
		"-registry", h.cfg.Registry,
		"-servers", strings.Join(servers, ","),
		"-log", h.logPath,
		"-items", fmt.Sprint(h.cfg.Items),
		"-work", h.cfg.Work.String(),
		"-jitter", h.cfg.Jitter.String(),
		"-record-interval", h.cfg.RecordInterval.String(),
		"-session-timeout", h.cfg.SessionTimeout.String(),
		"-shutdown-timeout", h.cfg.ShutdownTimeout.String(),
	}
	if h.cfg.Verbose {
		args = append(args, "-v")
	}
	if h.cfg.Overlap != "" {
		args = append(args, "-overlap", h.cfg.Overlap)
	}
	if h.cfg.Chain > 1 {
		args = append(args, "-chain", fmt.Sprint(h.cfg.Chain))
	}
	if j := h.cfg.fireJitter(); j > 0 {
		args = append(args, "-fire-jitter", j.String())
	}
	if h.cfg.FailEvery > 0 {
		args = append(args, "-fail-every", fmt.Sprint(h.cfg.FailEvery))
	}
	if h.cfg.LongEvery > 0 {
		args = append(args, "-long-every", fmt.Sprint(h.cfg.LongEvery), "-long", h.cfg.Long.String())
	}
	name := h.instanceBin
	if p.inNetns {
		name, args = h.netns.command(name, args...)
	}
	cmd := exec.Command(name, args...)
	out, err := os.OpenFile(filepath.Join(h.dir, p.id+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	cmd.Stderr = out
	exited, ready := make(chan struct{}), make(chan struct{})
	// The instance's stdout goes to its log, but for the ready line, which
	// closes ready.
	cur, err := proc.Start(p.id, cmd, func(stdout io.Reader) {
		sc := bufio.NewScanner(stdout)
		readySeen := false
		for sc.Scan() {
			line := sc.Text()
			if line == readyLine && !readySeen {
				readySeen = true
				close(ready)
				continue
			}
			fmt.Fprintln(out, line)
		}
	})
	if err != nil {
		out.Close()
		return err
	}
	pid := cur.PID()
	p.mu.Lock()
	p.current, p.exited, p.ready, p.frozen = cur, exited, ready, false
	p.mu.Unlock()
	h.progress("start %s pid %d%s", p.id, pid, map[bool]string{true: " (in network namespace)"}[p.inNetns])
	// Logs the exit once the process is reaped; ends with it.
	go func() {
		defer close(exited)
		<-cur.Done()
		out.Close()
		how := "exit 0"
		if err := cur.Err(); err != nil {
			how = err.Error()
		}
		h.event(eventlog.Event{Ev: eventlog.Exit, Inst: p.id, PID: pid, Detail: how})
		p.mu.Lock()
		p.frozen = false
		p.mu.Unlock()
	}()
	return nil
}

// signal sends sig to p's process group and logs it.
func (h *harness) signal(p *instance, sig syscall.Signal) error {
	cur, _, _, _ := p.state()
	if !p.alive() {
		return fmt.Errorf("%s is not running", p.id)
	}
	pid := cur.PID()
	name := signalName(sig)
	// A stop is logged before it is sent and a continue after, so that the
	// logged frozen window contains the real one.
	if sig != syscall.SIGCONT {
		h.event(eventlog.Event{Ev: eventlog.Signal, Inst: p.id, PID: pid, Detail: name})
	}
	if err := cur.Signal(sig); err != nil {
		return err
	}
	p.mu.Lock()
	switch sig {
	case syscall.SIGSTOP:
		p.frozen = true
	case syscall.SIGCONT:
		p.frozen = false
	}
	p.mu.Unlock()
	if sig == syscall.SIGCONT {
		h.event(eventlog.Event{Ev: eventlog.Signal, Inst: p.id, PID: pid, Detail: name})
	}
	return nil
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGSTOP:
		return "SIGSTOP"
	case syscall.SIGCONT:
		return "SIGCONT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// waitExit waits until p's current process is reaped, up to d.
func waitExit(p *instance, d time.Duration) bool {
	_, done, _, _ := p.state()
	if done == nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// terminate stops p gracefully (SIGTERM, then SIGKILL after the shutdown
// deadline and a margin) and waits until it is reaped.
func (h *harness) terminate(p *instance) {
	if !p.alive() {
		return
	}
	if _, _, _, frozen := p.state(); frozen {
		_ = h.signal(p, syscall.SIGCONT)
	}
	_ = h.signal(p, syscall.SIGTERM)
	if waitExit(p, h.cfg.ShutdownTimeout+h.cfg.SessionTimeout+5*time.Second) {
		return
	}
	h.progress("%s did not exit after SIGTERM; killing it", p.id)
	h.kill(p)
}

// kill kills p with SIGKILL and waits until it is reaped.
func (h *harness) kill(p *instance) {
	if !p.alive() {
		return
	}
	_ = h.signal(p, syscall.SIGKILL)
	if !waitExit(p, 10*time.Second) {
		h.progress("%s not reaped 10s after SIGKILL", p.id)
	}
}

// waitReady waits until p's current process is ready, or ctx ends.
func waitReady(ctx context.Context, p *instance) error {
	_, done, ready, _ := p.state()
	if ready == nil {
		return fmt.Errorf("%s was never started", p.id)
	}
	select {
	case <-ready:
		return nil
	case <-done:
		return fmt.Errorf("%s exited before it was ready", p.id)
	case <-ctx.Done():
		return fmt.Errorf("%s not ready: %w", p.id, ctx.Err())
	}
}
