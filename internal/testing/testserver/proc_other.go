//go:build !unix

package testserver

import (
	"errors"
	"os"
	"syscall"
)

// errNoPause says a process cannot be paused here.
var errNoPause = errors.New("pausing a process needs a unix system")

func sysProcAttr() *syscall.SysProcAttr { return nil }

// Signal is what [Process.Signal] sends.
type Signal int

// The signals a test server is sent. Without process groups or signals,
// Term and Kill both kill the process, and Stop and Cont fail.
const (
	Term Signal = iota
	Kill
	Stop
	Cont
)

// Signal kills the process for Term and Kill; Stop and Cont fail.
func (p *Process) Signal(sig Signal) error {
	if sig == Stop || sig == Cont {
		return errNoPause
	}
	err := p.cmd.Process.Kill()
	if err == os.ErrProcessDone {
		return nil
	}
	return err
}

// resume has nothing to continue: no process is paused here.
func (p *Process) resume() error { return nil }
