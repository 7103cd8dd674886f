package process

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/shardjob/shardjob/job/internal/placement"
)

// Holder identifies a scheduler: its process (host, pid, and a token drawn
// once per process, which tells a pid reused by a restart from the same
// process) and a token of its own. Its fields are the instance node's
// (placement.Holder).
type Holder placement.Holder

// processToken is drawn once per process.
var processToken = NewToken()

// NewToken draws a token: 16 hex digits of crypto/rand.
func NewToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// This returns a Holder for a new scheduler of this process: this host,
// this pid, this process's token, and a token of its own.
func This() Holder {
	host, err := os.Hostname()
	if err != nil {
		host = ""
	}
	return Holder{Host: host, PID: os.Getpid(), Process: processToken, Token: NewToken()}
}

// String names the process for an error message.
func (h Holder) String() string {
	if h.Host == "" && h.PID == 0 {
		return "a process that does not say which (an older version)"
	}
	return fmt.Sprintf("pid %d on host %q", h.PID, h.Host)
}

// EarlierLifeOf reports whether h, found holding our id, is this process
// (another session of it) or a process of this host that is gone.
func (h Holder) EarlierLifeOf(me Holder) bool {
	switch {
	case h.Token != "" && h.Token == me.Token:
		return true
	case h.Process != "" && h.Process == me.Process:
		return false // another scheduler of this very process
	case h.Host == "" || h.Host != me.Host:
		return false
	case h.PID == me.PID:
		return true // this pid's earlier process (a restart in a container)
	default:
		return !processAlive(h.PID)
	}
}

// processAlive reports whether a process with pid exists on this host.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	// EPERM: it exists, under another user.
	return err == nil || errors.Is(err, syscall.EPERM)
}

// DefaultServerID is ElasticJob's instance id: the host's first
// non-loopback IPv4 address (else its name) and the pid, so that several
// processes on one host each have their own.
func DefaultServerID() string {
	return defaultHost() + "@-@" + strconv.Itoa(os.Getpid())
}

func defaultHost() string {
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	if h, err := os.Hostname(); err == nil && len(h) <= 100 && placement.ServerIDPattern.MatchString(h) {
		return h
	}
	return "127.0.0.1"
}
