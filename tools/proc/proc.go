// Package proc starts and stops the child processes of the tools (the
// chaos harness's instances, the benchmarks' instances, nodes and servers)
// in one way: each in its own process group, so that a signal reaches
// everything it started; killed by the kernel if the tool dies, so that
// none outlives it; reaped by a goroutine that ends when the process does.
// It also builds the programs they run.
//
// The SDK's own process handling (jobtype/script's process groups and
// regcenter/zktest's and etcdtest's servers) is separate on purpose: the
// SDK imports nothing from tools/.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Proc is a child process started in its own process group.
type Proc struct {
	name string
	pid  int
	done chan struct{}
	err  error
}

// Start starts cmd as a Proc named name (in errors). cmd's Stdin and
// Stderr are the caller's to set. When stdout is nil, so is cmd.Stdout;
// otherwise stdout is given the process's standard output on the reaping
// goroutine, which discards whatever stdout leaves unread (so that the
// process never blocks on a full pipe) and then waits for the process.
// Done is closed after stdout has returned and the process is reaped.
func Start(name string, cmd *exec.Cmd, stdout func(io.Reader)) (*Proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out io.Reader
	if stdout != nil {
		r, err := cmd.StdoutPipe()
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		out = r
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{name: name, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		if stdout != nil {
			stdout(out)
			_, _ = io.Copy(io.Discard, out)
		}
		p.err = cmd.Wait()
	}()
	return p, nil
}

// Name is the name the process was started with.
func (p *Proc) Name() string { return p.name }

// PID is the process's id, and its process group's.
func (p *Proc) PID() int { return p.pid }

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

// Signal sends sig to the process group. A group that is already gone is
// not an error.
func (p *Proc) Signal(sig syscall.Signal) error {
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%v to %s (pid %d): %w", sig, p.name, p.pid, err)
	}
	return nil
}

// Kill sends SIGKILL to the process group and waits, up to 10 s, until the
// process is reaped.
func (p *Proc) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	return p.Wait(10 * time.Second)
}

// Stop sends SIGTERM to the process group and kills it if it has not
// exited within grace.
func (p *Proc) Stop(grace time.Duration) error {
	if !p.Alive() {
		return nil
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
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
		return fmt.Errorf("%s (pid %d) not reaped %v after the signal", p.name, p.pid, d)
	}
}

// GoBuild builds package pkg into the file out with the go command, in
// directory dir (a module that can resolve pkg), with the build flags
// given (such as -race); ctx bounds the build.
func GoBuild(ctx context.Context, dir, pkg, out string, flags ...string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		root := os.Getenv("GOROOT")
		if root == "" {
			return errors.New("the go command is not in PATH")
		}
		goBin = filepath.Join(root, "bin", "go")
	}
	args := append(append([]string{"build", "-o", out}, flags...), pkg)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// BuildProgram builds the module's program pkg (an import path under
// github.com/shardjob/shardjob) into dir/name with the build flags given,
// from the module found at or above the working directory, and returns the
// binary's path; ctx bounds the build. An error says to pass a prebuilt
// binary when the module is not found.
func BuildProgram(ctx context.Context, pkg, dir, name string, flags ...string) (string, error) {
	modDir, err := ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("%w (or pass -instance-bin)", err)
	}
	bin := filepath.Join(dir, name)
	if err := GoBuild(ctx, modDir, pkg, bin, flags...); err != nil {
		return "", err
	}
	return bin, nil
}

// ModuleRoot finds the shardjob module's directory at or above the working
// directory.
func ModuleRoot() (string, error) {
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
			return "", errors.New("not inside the github.com/shardjob/shardjob module: run from the repository")
		}
		dir = parent
	}
}
