//go:build !linux

package script

import (
	"syscall"
	"time"
)

const supported = false

type procStat struct {
	state byte
	pgrp  int
	start uint64
}

func sysProcAttr() *syscall.SysProcAttr                           { return &syscall.SysProcAttr{Setpgid: true} }
func killGroup(pgid int, sig syscall.Signal) error                { return ErrUnsupported }
func waitExited(pid int) error                                    { return ErrUnsupported }
func readProcStat(pid int) (procStat, error)                      { return procStat{}, ErrUnsupported }
func groupMembers(pgid int) (map[int]procStat, error)             { return nil, ErrUnsupported }
func waitGroupGone(pgid int, timeout time.Duration) (bool, error) { return false, ErrUnsupported }
