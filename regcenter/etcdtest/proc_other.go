//go:build !unix

package etcdtest

import (
	"errors"
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

type signal int

const (
	sigTerm signal = iota
	sigKill
	sigStop
	sigCont
)

// signalGroup has no process groups to use here: both signals kill the
// process.
func signalGroup(p *process, sig signal) error {
	if sig == sigStop || sig == sigCont {
		return errors.New("etcdtest: pausing a member needs a unix system")
	}
	err := p.cmd.Process.Kill()
	if err == os.ErrProcessDone {
		return nil
	}
	return err
}

type signalType = signal
