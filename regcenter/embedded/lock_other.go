//go:build !unix

package embedded

import "os"

// tryLock takes the Dir's lock. Without flock it always succeeds: two
// processes on one Dir are then kept apart by etcd's own file lock only.
func tryLock(f *os.File) (held bool, err error) { return true, nil }

// alive reports whether a process with this id runs; here it cannot
// tell, and says no.
func alive(pid int) bool { return false }
