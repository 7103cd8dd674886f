package embedded

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A namespace shared through [Join] by the processes of a host is meant to
// live on one member. A process that names another Dir runs a registry of
// its own under the same namespace, and every item then runs once per
// registry. Nothing in either registry can show this, so each Join
// records its namespace and Dir in a host-wide directory of this user's
// (under the temporary directory), and looks there for the same namespace
// on another Dir whose member runs.

// splitsDir is the host-wide directory of the namespaces' Dirs.
func splitsDir() string {
	return filepath.Join(os.TempDir(), "shardjob-embedded-"+strconv.Itoa(os.Getuid()))
}

// recordNamespace notes that namespace ns lives on the member of dir, an
// absolute path, after forgetting the notes of removed Dirs (a test's, a
// demo's) so that they do not pile up. It is best effort: the check it
// serves is advice.
func recordNamespace(ns, dir string) {
	sweepNotes()
	d := filepath.Join(splitsDir(), hex.EncodeToString([]byte(ns)))
	if err := os.MkdirAll(d, 0o700); err != nil {
		return
	}
	sum := sha256.Sum256([]byte(dir))
	name := filepath.Join(d, hex.EncodeToString(sum[:8]))
	if b, err := os.ReadFile(name); err == nil && string(b) == dir {
		return
	}
	if err := writeFile(name, dir); errors.Is(err, os.ErrNotExist) {
		// Another process's sweep removed d, empty, just now.
		if os.MkdirAll(d, 0o700) == nil {
			_ = writeFile(name, dir) // best effort, as above
		}
	}
}

// otherMembers returns the Dirs other than dir on which namespace ns was
// recorded and whose member runs now (a process holds the Dir's lock).
func otherMembers(ns, dir string) []string {
	d := filepath.Join(splitsDir(), hex.EncodeToString([]byte(ns)))
	entries, err := os.ReadDir(d)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, e.Name()))
		if err != nil {
			continue
		}
		other := string(b)
		if _, err := os.Stat(other); errors.Is(err, os.ErrNotExist) {
			// A Dir removed (a test's, a demo's): its note goes too, so
			// that the notes do not grow without bound.
			_ = os.Remove(filepath.Join(d, e.Name())) // best effort
			continue
		}
		if other == dir || !hosted(other) {
			continue
		}
		out = append(out, other)
	}
	return out
}

// hosted reports whether dir's HostFile names a serving member whose
// process runs. It takes no lock: a lock taken to look, however briefly,
// could make that Dir's own start fail.
func hosted(dir string) bool {
	pid, endpoint := readHost(dir)
	n, err := strconv.Atoi(pid)
	return err == nil && endpoint != notServing && alive(n)
}

// sweepNotes removes the notes of Dirs that no longer exist, and the
// namespaces left with none.
func sweepNotes() {
	nss, err := os.ReadDir(splitsDir())
	if err != nil {
		return
	}
	for _, n := range nss {
		d := filepath.Join(splitsDir(), n.Name())
		notes, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range notes {
			name := filepath.Join(d, e.Name())
			b, err := os.ReadFile(name)
			if err != nil {
				continue
			}
			if _, err := os.Stat(string(b)); errors.Is(err, os.ErrNotExist) {
				_ = os.Remove(name) // best effort
			}
		}
		_ = os.Remove(d) // only if empty; best effort
	}
}
