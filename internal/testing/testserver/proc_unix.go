//go:build unix

package testserver

import (
	"errors"
	"syscall"
)

// Signal is what [Process.Signal] sends.
type Signal = syscall.Signal

// The signals a test server is sent.
const (
	Term = syscall.SIGTERM // stop gracefully
	Kill = syscall.SIGKILL // stop now, like a crash
	Stop = syscall.SIGSTOP // freeze, like a long GC pause
	Cont = syscall.SIGCONT // resume after Stop
)

// Signal sends sig to the process group the process leads (see [Start]),
// so that it reaches anything the server started too. A group that is
// gone already is no error.
func (p *Process) Signal(sig Signal) error {
	err := syscall.Kill(-p.PID, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// resume continues the group after a Stop.
func (p *Process) resume() error { return p.Signal(Cont) }
