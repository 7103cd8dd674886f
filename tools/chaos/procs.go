package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/tools/chaos/eventlog"
)

// readyLine is what an instance prints on stdout once its scheduler runs.
const readyLine = "READY"

// proc is one instance: a server id, and the process currently running it
// (a new one after each restart).
type proc struct {
	id      string
	inNetns bool

	mu     sync.Mutex
	pid    int
	done   chan struct{} // closed once the current process is reaped
	ready  chan struct{} // closed once the current process printed readyLine
	frozen bool
}

// state returns the current process's pid and channels.
func (p *proc) state() (pid int, done, ready chan struct{}, frozen bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid, p.done, p.ready, p.frozen
}

// alive reports whether a process runs for p (frozen or not).
func (p *proc) alive() bool {
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
func (h *harness) start(p *proc) error {
	if p.alive() {
		return fmt.Errorf("%s already runs", p.id)
	}
	servers := h.servers
	if p.inNetns {
		servers = h.nsServers
	}
	args := []string{
		"-id", p.id,
		"-servers", strings.Join(servers, ","),
		"-log", h.logPath,
		"-items", fmt.Sprint(h.cfg.Items),
		"-work", h.cfg.Work.String(),
		"-jitter", h.cfg.Jitter.String(),
		"-session-timeout", h.cfg.SessionTimeout.String(),
		"-shutdown-timeout", h.cfg.ShutdownTimeout.String(),
	}
	if h.cfg.Verbose {
		args = append(args, "-v")
	}
	name := h.instanceBin
	if p.inNetns {
		name, args = h.netns.command(name, args...)
	}
	cmd := exec.Command(name, args...)
	// Own process group (signals reach the whole of it), and killed by the
	// kernel if the harness dies, so that no instance outlives it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := os.OpenFile(filepath.Join(h.dir, p.id+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	cmd.Stderr = out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		out.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", p.id, err)
	}
	pid := cmd.Process.Pid
	done, ready := make(chan struct{}), make(chan struct{})
	p.mu.Lock()
	p.pid, p.done, p.ready, p.frozen = pid, done, ready, false
	p.mu.Unlock()
	h.progress("start %s pid %d%s", p.id, pid, map[bool]string{true: " (in network namespace)"}[p.inNetns])
	go func() {
		defer close(done)
		defer out.Close()
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
		err := cmd.Wait()
		how := "exit 0"
		if err != nil {
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
func (h *harness) signal(p *proc, sig syscall.Signal) error {
	pid, _, _, _ := p.state()
	if !p.alive() {
		return fmt.Errorf("%s is not running", p.id)
	}
	name := signalName(sig)
	// A stop is logged before it is sent and a continue after, so that the
	// logged frozen window contains the real one.
	if sig != syscall.SIGCONT {
		h.event(eventlog.Event{Ev: eventlog.Signal, Inst: p.id, PID: pid, Detail: name})
	}
	err := syscall.Kill(-pid, sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s to %s: %w", name, p.id, err)
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
func waitExit(p *proc, d time.Duration) bool {
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
func (h *harness) terminate(p *proc) {
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
func (h *harness) kill(p *proc) {
	if !p.alive() {
		return
	}
	_ = h.signal(p, syscall.SIGKILL)
	if !waitExit(p, 10*time.Second) {
		h.progress("%s not reaped 10s after SIGKILL", p.id)
	}
}

// waitReady waits until p's current process is ready, or ctx ends.
func waitReady(ctx context.Context, p *proc) error {
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
