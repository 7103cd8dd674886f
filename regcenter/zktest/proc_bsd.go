//go:build unix && !linux

package zktest

import "syscall"

// sysProcAttr puts the JVM in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
