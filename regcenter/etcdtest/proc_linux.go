//go:build linux

package etcdtest

import "syscall"

// sysProcAttr puts the member in its own process group and has the kernel kill
// it if the process that started it dies (say, a test binary that panics or
// hits its -timeout), so no server outlives the test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
