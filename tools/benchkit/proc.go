package benchkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Proc is a child process started in its own process group, killed by the
// kernel if the benchmark dies (so that none outlives it), and reaped by a
// goroutine that ends when the process does.
type Proc struct {
	// Name names the process in errors.
	Name string
	// PID is the process's id, and its process group's.
	PID  int
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts cmd as a Proc. cmd's Stdin, Stdout and Stderr are the
// caller's to set, and must not be pipes the caller reads to their end
// after Wait: Proc's reaper calls cmd.Wait.
func Start(name string, cmd *exec.Cmd) (*Proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, PID: cmd.Process.Pid, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = cmd.Wait()
	}()
	return p, nil
}

// Done is closed once the process has been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit; valid once Done is closed.
func (p *Proc) Err() error { return p.err }

// Alive reports whether the process has not been reaped yet.
func (p *Proc) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to the process group and waits, up to 10 s, until the
// process is reaped.
func (p *Proc) Kill() error {
	if err := syscall.Kill(-p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGKILL %s: %w", p.Name, err)
	}
	return p.Wait(10 * time.Second)
}

// Stop sends SIGTERM to the process group and kills it if it has not
// exited within grace.
func (p *Proc) Stop(grace time.Duration) error {
	if !p.Alive() {
		return nil
	}
	if err := syscall.Kill(-p.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGTERM %s: %w", p.Name, err)
	}
	if p.Wait(grace) == nil {
		return nil
	}
	return p.Kill()
}

// Wait waits up to d for the process to be reaped.
func (p *Proc) Wait(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return fmt.Errorf("%s (pid %d) not reaped %v after the signal", p.Name, p.PID, d)
	}
}

// GoBuild builds package pkg into the file out with the go command, in
// directory dir (a module that can resolve pkg); ctx bounds the build.
func GoBuild(ctx context.Context, dir, pkg, out string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		root := os.Getenv("GOROOT")
		if root == "" {
			return errors.New("the go command is not in PATH")
		}
		goBin = root + "/bin/go"
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}
