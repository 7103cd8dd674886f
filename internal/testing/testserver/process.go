package testserver

import (
	"fmt"
	"os/exec"
	"time"
)

// Process is a server process that [Start] started. A goroutine of its own
// waits for it.
type Process struct {
	// PID is the process id, and the id of the process group it leads.
	PID int

	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's result; read only after done is closed
}

// Start starts cmd in a process group of its own, so that a signal
// reaches whatever the server starts too, and, on Linux, to be killed by
// the kernel if the process that started it dies (a test binary that
// panics or hits its -timeout), so that no server outlives its test. It
// sets cmd.SysProcAttr. exited, when not nil, runs once the process has
// exited and before [Process.Done] is closed (to close its log, say).
func Start(cmd *exec.Cmd, exited func()) (*Process, error) {
	cmd.SysProcAttr = sysProcAttr()
	// Start from a fresh goroutine: the kernel's parent-death signal is
	// tied to the starting thread, and a fresh goroutine never runs on a
	// thread that is locked (and so may exit) under a caller's goroutine.
	started := make(chan error, 1)
	go func() { started <- cmd.Start() }()
	if err := <-started; err != nil {
		return nil, err
	}
	p := &Process{PID: cmd.Process.Pid, cmd: cmd, done: make(chan struct{})}
	go func() { // owned by the process: ends when it exits
		p.err = cmd.Wait()
		if exited != nil {
			exited()
		}
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether Done is closed.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is why the process exited (cmd.Wait's error), once Done is closed;
// nil before.
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Stop ends the process and returns once it is reaped. If graceful, it
// first continues the process group (a paused server could not exit
// otherwise) and sends it SIGTERM, and waits up to StopGrace for the
// process to exit; then it sends the group SIGKILL and waits up to
// StopGrace for it to be reaped.
func (p *Process) Stop(graceful bool) error {
	if graceful && !p.Exited() {
		if err := p.resume(); err != nil {
			return fmt.Errorf("SIGCONT pid %d: %w", p.PID, err)
		}
		if err := p.Signal(Term); err != nil {
			return fmt.Errorf("SIGTERM pid %d: %w", p.PID, err)
		}
		t := time.NewTimer(StopGrace)
		select {
		case <-p.done:
		case <-t.C:
		}
		t.Stop()
	}
	if !p.Exited() {
		if err := p.Signal(Kill); err != nil {
			return fmt.Errorf("SIGKILL pid %d: %w", p.PID, err)
		}
	}
	t := time.NewTimer(StopGrace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return fmt.Errorf("pid %d still running %v after SIGKILL", p.PID, StopGrace)
	}
}
