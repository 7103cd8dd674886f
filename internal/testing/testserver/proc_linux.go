//go:build linux

package testserver

import "syscall"

// sysProcAttr puts the server in its own process group and has the
// kernel kill it if the process that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
