package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// A value read from the registry that does not decode (garbage written by
// hand, by another program, by a raw etcd client) is never read as a
// removal: the config keeps the last good one in force, a record or mark
// reads as absent and is written again by the next completion, an
// assignment asks for a reshard, the load table is rebuilt. Each bad
// version of a node is reported once (badValues); only the config node's
// absence, read back, removes a job (configGone).

// maxBadValues bounds the nodes badValues remembers; past it, it starts
// over (a node then may be reported once more).
const maxBadValues = 1024

// badValues remembers the version of each node last reported as not
// decoding, so that each bad version is reported once however often it is
// read. It owns its lock.
type badValues struct {
	mu   sync.Mutex
	seen map[string]int64 // path -> Mzxid of the version reported
}

// first reports whether the version of p written at mzxid is reported for
// the first time, and remembers it.
func (b *badValues) first(p string, mzxid int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if z, ok := b.seen[p]; ok && z == mzxid {
		return false
	}
	if b.seen == nil || len(b.seen) >= maxBadValues {
		b.seen = map[string]int64{}
	}
	b.seen[p] = mzxid
	return true
}

// good forgets p: it decoded, so its next bad version is news.
func (b *badValues) good(p string) {
	b.mu.Lock()
	delete(b.seen, p)
	b.mu.Unlock()
}

// reportBad logs that the value of p at stat st does not decode, at warn
// level the first time for that version and at debug level after that. It
// reports whether this was the first time.
func (r *runner) reportBad(p string, st regcenter.Stat, msg string, args ...any) bool {
	if r.bad.first(p, st.Mzxid) {
		r.log.Warn(msg, append(args, "node", p, "version", st.Version)...)
		return true
	}
	r.log.Debug(msg, append(args, "node", p, "version", st.Version)...)
	return false
}

// configGone runs when a watch reports the config node deleted. The job
// stops here only when the node is absent when read back: a watch also
// reports a deletion for a node written over itself in one transaction (a
// deletion and a creation, as ZooKeeper's watches see such a multi), and
// a value nobody can decode is a bad config, not a removal. A read that
// fails is tried again until it answers or the runner stops.
func (r *runner) configGone(ctx context.Context) {
	wait := 100 * time.Millisecond
	for {
		cctx, cancel := r.coordCtx(r.rc.Session())
		ok, _, err := r.rc.Exists(cctx, r.paths.Config())
		cancel()
		switch {
		case err == nil && !ok:
			r.s.removeRemoved(r)
			return
		case err == nil:
			r.log.Info("config node reported deleted is there: reading it as a change")
			r.reloadConfig()
			return
		case errors.Is(err, regcenter.ErrClosed):
			return
		}
		r.log.Warn("config node reported deleted; reading it back", "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, r.sessionTimeout())
	}
}

// errBadValue reports a stored value that does not decode: it is read as
// absent, never as a removal.
var errBadValue = errors.New("job: stored value does not decode")

// maxStoredValue bounds what the decoders below read: more than any
// registry stores in one node (ZooKeeper's 1 MiB, etcd's 1.5 MiB
// requests), so a larger value is garbage without being parsed.
const maxStoredValue = 2 << 20

// maxStoredMillis is the latest time a record or mark may name: the end of
// the year 9999, in ms since the epoch.
const maxStoredMillis = 253402300799999

func storedTime(ms int64) bool { return ms > 0 && ms <= maxStoredMillis }

// decodeJSON decodes a stored JSON value of at most maxStoredValue bytes.
func decodeJSON(data []byte, v any, what string) error {
	if len(data) > maxStoredValue {
		return fmt.Errorf("%w: %s of %d bytes", errBadValue, what, len(data))
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", errBadValue, what, err)
	}
	return nil
}

// decodeCompleted decodes a completed record (execution/{item}/completed):
// a fire from 1970 to 9999, and runs of fires that end by 9999. What it
// covers is read by coverOf, which leaves out any run that is not a run.
func decodeCompleted(data []byte) (completedMark, error) {
	var m completedMark
	if err := decodeJSON(data, &m, "completed record"); err != nil {
		return completedMark{}, err
	}
	if !storedTime(m.Fire) {
		return completedMark{}, fmt.Errorf("%w: completed record with fire %d", errBadValue, m.Fire)
	}
	for _, s := range m.Ran {
		if s[0] > maxStoredMillis || s[1] > maxStoredMillis {
			return completedMark{}, fmt.Errorf("%w: completed record with a run of fires %d-%d", errBadValue, s[0], s[1])
		}
	}
	return m, nil
}

// decodeRunning decodes a running mark (execution/{item}/running): it
// names a server.
func decodeRunning(data []byte) (runningMark, error) {
	var m runningMark
	if err := decodeJSON(data, &m, "running mark"); err != nil {
		return runningMark{}, err
	}
	if m.Server == "" {
		return runningMark{}, fmt.Errorf("%w: running mark without a server", errBadValue)
	}
	return m, nil
}

// decodeMisfire decodes a misfire mark (execution/{item}/misfire): the
// first fire owed, from 1970 to 9999.
func decodeMisfire(data []byte) (misfireMark, error) {
	var m misfireMark
	if err := decodeJSON(data, &m, "misfire mark"); err != nil {
		return misfireMark{}, err
	}
	if !storedTime(m.Since) {
		return misfireMark{}, fmt.Errorf("%w: misfire mark since %d", errBadValue, m.Since)
	}
	return m, nil
}
