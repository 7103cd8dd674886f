//go:build unix

package etcdtest

import (
	"errors"
	"syscall"
)

// signalGroup sends sig to the process group led by pid. Every member runs
// in its own group (see sysProcAttr), so this reaches the member and anything
// it may have started.
func signalGroup(p *process, sig syscall.Signal) error {
	err := syscall.Kill(-p.pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

type signalType = syscall.Signal
