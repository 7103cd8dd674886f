//go:build !unix

package zktest

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

type signal int

const (
	sigTerm signal = iota
	sigKill
)

// signalGroup has no process groups to use here: both signals kill the
// process.
func signalGroup(p *process, _ signal) error {
	err := p.cmd.Process.Kill()
	if err == os.ErrProcessDone {
		return nil
	}
	return err
}
