package embedded

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// HostFile is the file in a member's Dir that the process hosting the
// member holds an exclusive lock (flock) on, from before the member opens
// its data until it has stopped. It holds that process's id and, once the
// member serves, its endpoint: "pid 1234 endpoint 127.0.0.1:2379". The
// kernel drops the lock when the process exits, however it exits, so a
// file whose lock nobody holds names a process that is gone.
const HostFile = "host"

// ErrDirInUse is returned by [Start] and [New] when another process (or
// another member of this one) hosts the member of the Dir: its error names
// that process and its endpoint. Name the Dir in
// [regcenter.Config.EmbeddedDir] to connect to it, or use [Join], which
// does so itself.
var ErrDirInUse = errors.New("embedded etcd: the directory's member is hosted by another process")

// dirLock is the hosting process's hold on a Dir: the locked HostFile.
type dirLock struct {
	f   *os.File
	dir string
}

// lockDir takes dir's HostFile lock without waiting and records this
// process in it. When another holds the lock it fails at once with
// [ErrDirInUse], naming the holder as its HostFile says.
func lockDir(dir string) (*dirLock, error) {
	name := filepath.Join(dir, HostFile)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd in %s: %w", dir, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("embedded etcd in %s: locking %s: %w", dir, HostFile, err)
	}
	if !held {
		f.Close()
		pid, endpoint := readHost(dir)
		return nil, fmt.Errorf("%w: %s is hosted by process %s, serving %s; name it in embeddedDir (or --embedded) to connect, or use embedded.Join",
			ErrDirInUse, dir, pid, endpoint)
	}
	l := &dirLock{f: f, dir: dir}
	if err := l.record(""); err != nil {
		return nil, errors.Join(err, l.release())
	}
	return l, nil
}

// record writes this process's id and the member's endpoint ("" while it
// starts) into the locked HostFile.
func (l *dirLock) record(endpoint string) error {
	body := "pid " + strconv.Itoa(os.Getpid())
	if endpoint != "" {
		body += " endpoint " + endpoint
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("embedded etcd in %s: %s: %w", l.dir, HostFile, err)
	}
	if _, err := l.f.WriteAt([]byte(body+"\n"), 0); err != nil {
		return fmt.Errorf("embedded etcd in %s: %s: %w", l.dir, HostFile, err)
	}
	return nil
}

// release empties the HostFile (no process hosts the member now) and drops
// the lock. The file stays: removing it would let a process that opened it
// before the removal lock a file nobody else sees.
func (l *dirLock) release() error {
	terr := l.f.Truncate(0) // a stale pid would only mislead readHost's readers
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("embedded etcd in %s: %s: %w", l.dir, HostFile, err)
	}
	if terr != nil {
		return fmt.Errorf("embedded etcd in %s: %s: %w", l.dir, HostFile, terr)
	}
	return nil
}

// notServing is readHost's endpoint for a HostFile that names none.
const notServing = "(not yet serving)"

// readHost returns the pid and endpoint dir's HostFile names, "?" and
// notServing for what it does not say.
func readHost(dir string) (pid, endpoint string) {
	pid, endpoint = "?", notServing
	f, err := os.Open(filepath.Join(dir, HostFile))
	if err != nil {
		return pid, endpoint
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 256)) // what it says is best effort
	fields := strings.Fields(string(b))
	for i := 0; i+1 < len(fields); i += 2 {
		switch fields[i] {
		case "pid":
			pid = fields[i+1]
		case "endpoint":
			endpoint = fields[i+1]
		}
	}
	return pid, endpoint
}
