//go:build unix && !linux

package etcdtest

import "syscall"

// sysProcAttr puts the member in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
