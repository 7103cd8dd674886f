package job

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/job/internal/placement"
)

// The process behind a server id. An instance's node
// (layout.Instance) names the process that holds the id: its host, its
// pid and a token drawn when the scheduler was made. A scheduler that
// finds the id held by another session tells, from those, its own earlier
// life (the same token: a session lost and replaced), a dead earlier
// process on this host (the same host, a pid that is gone or is now its
// own), from a live process elsewhere, which it refuses at once with
// ErrServerIDInUse rather than waiting a session timeout for a node that
// will not go.

// holder identifies a scheduler: its process (host, pid, and a token drawn
// once per process, which tells a pid reused by a restart from the same
// process) and a token of its own. Its fields are the instance node's
// (placement.Holder).
type holder placement.Holder

// processToken is drawn once per process.
var processToken = newToken()

func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

func thisProcess() holder {
	host, err := os.Hostname()
	if err != nil {
		host = ""
	}
	return holder{Host: host, PID: os.Getpid(), Process: processToken, Token: newToken()}
}

// String names the process for an error message.
func (h holder) String() string {
	if h.Host == "" && h.PID == 0 {
		return "a process that does not say which (an older version)"
	}
	return fmt.Sprintf("pid %d on host %q", h.PID, h.Host)
}

// earlierLifeOf reports whether h, found holding our id, is this process
// (another session of it) or a process of this host that is gone.
func (h holder) earlierLifeOf(me holder) bool {
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

// defaultServerID is ElasticJob's instance id: the host's first
// non-loopback IPv4 address (else its name) and the pid, so that several
// processes on one host each have their own.
func defaultServerID() string {
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
	if h, err := os.Hostname(); err == nil && len(h) <= 100 && serverIDPattern.MatchString(h) {
		return h
	}
	return "127.0.0.1"
}

// idInUse is the error for an id held by a live process elsewhere.
func idInUse(id string, h holder, session int64, timeout time.Duration) error {
	return fmt.Errorf("%w: server id %q is held by %s (session 0x%x); give each process its own id, or leave the default (one per process); if that process is gone, its session ends within %v",
		ErrServerIDInUse, id, h, session, timeout)
}
