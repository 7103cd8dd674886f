//go:build linux

package script

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const supported = true

// sysProcAttr puts the command in a process group of its own and has the
// kernel kill it when the instance dies. The parent-death signal follows
// the thread that started the process; Go keeps its threads for the
// process's life unless a goroutine locked to one exits, which this
// package never does.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends sig to the process group pgid. A group that is gone
// already is not an error.
func killGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("script: refusing to signal process group %d", pgid)
	}
	err := syscall.Kill(-pgid, sig)
	if err == nil || errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return fmt.Errorf("script: signalling process group %d: %w", pgid, err)
}

// waitExited returns once the child pid has exited, leaving it unreaped
// (a zombie): its pid, and so its process group id, cannot be given to
// another process until exec.Cmd.Wait reaps it.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		return err
	}
}

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	state byte // R, S, D, Z (zombie), ...
	pgrp  int
	start uint64 // clock ticks after boot
}

// readProcStat reads /proc/PID/stat. A process that does not exist is an
// error wrapping os.ErrNotExist.
func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(data))
}

// parseProcStat parses a stat line. The command name (field 2) is in
// parentheses and may itself contain spaces and parentheses, so fields are
// counted from the last ')'.
func parseProcStat(line string) (procStat, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("script: malformed /proc stat line %q", line)
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state): pgrp is field 5, starttime field 22.
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("script: short /proc stat line %q", line)
	}
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, fmt.Errorf("script: malformed /proc stat line %q: %w", line, err)
	}
	return procStat{state: f[0][0], pgrp: pgrp, start: start}, nil
}

// groupMembers returns the live (not zombie) processes in group pgid.
func groupMembers(pgid int) (map[int]procStat, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	pids := map[int]procStat{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil {
			continue // gone meanwhile
		}
		if st.pgrp == pgid && st.state != 'Z' {
			pids[pid] = st
		}
	}
	return pids, nil
}

// waitGroupGone waits until no live process is left in group pgid, or
// until timeout, and reports whether the group is gone. A signal is
// delivered asynchronously: kill returns before its target has died.
// Zombies (the group's unreaped first process among them) do not count.
func waitGroupGone(pgid int, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return true, nil
		}
		members, err := groupMembers(pgid)
		if err != nil {
			return false, err
		}
		if len(members) == 0 {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}
