package stored

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// ErrBadValue reports a stored value that does not decode: its reader
// takes it as absent (or repairs it), never as a removal.
var ErrBadValue = errors.New("job: stored value does not decode")

// MaxValueBytes bounds what the decoders read: more than any registry
// stores in one node (ZooKeeper's 1 MiB, etcd's 1.5 MiB requests), so a
// larger value is garbage without being parsed.
const MaxValueBytes = 2 << 20

// maxMillis is the latest time a record or mark may name: the end of the
// year 9999, in ms since the epoch.
const maxMillis = 253402300799999

// validMillis reports whether ms, a time a record or mark names in ms
// since the epoch, is one a fire may have: after 1970, by 9999.
func validMillis(ms int64) bool { return ms > 0 && ms <= maxMillis }

// decodeJSON decodes a stored JSON value of at most MaxValueBytes bytes
// into v; what names the value in the error, which wraps ErrBadValue.
func decodeJSON(data []byte, v any, what string) error {
	if len(data) > MaxValueBytes {
		return fmt.Errorf("%w: %s of %d bytes", ErrBadValue, what, len(data))
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadValue, what, err)
	}
	return nil
}

// maxBadValues bounds the nodes BadValues remembers; past it, it starts
// over (a node then may be reported once more).
const maxBadValues = 1024

// BadValues remembers the version of each node last reported as not
// decoding, so that each bad version is reported once however often it
// is read. The zero value is ready; it owns its lock, a leaf.
type BadValues struct {
	mu   sync.Mutex
	seen map[string]int64 // path -> Mzxid of the version reported
}

// First reports whether the version of the node at p written at mzxid
// (the registry's Stat.Mzxid) is reported for the first time, and
// remembers it.
func (b *BadValues) First(p string, mzxid int64) bool {
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

// Good forgets p: it decoded, so its next bad version is news.
func (b *BadValues) Good(p string) {
	b.mu.Lock()
	delete(b.seen, p)
	b.mu.Unlock()
}
