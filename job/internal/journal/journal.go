package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// RecordInterval is how long a journalled completion may leave the item's
// record behind: its record is written at the first completion after
// that, by the reconcile round once an item has waited that long, and
// before its mark is released.
const RecordInterval = 20 * time.Second

// Window is how long the first completion after a journal write waits for
// others to share the next one: a completion returns within it and a
// write's round trip. It is not waited after a write that carried one put
// alone: completions that come alone (a lone job's, one a second) would
// each wait for nothing, and the process's threads would park and wake
// around the wait (its CPU per completion about 2.7 times a record
// written at once). The write after such a write goes at once, and
// carries the puts that came during the one before; the first write
// waits.
const Window = 10 * time.Millisecond

// MaxBytes bounds the journal node: a completion that would make it
// larger writes its record instead.
const MaxBytes = 256 << 10

// OrphanAge is how long a journal must have gone unwritten before another
// instance folds it into the records and deletes it: far beyond any
// record interval, so that a live process's journal holds only entries
// its records already cover by then (it folds nothing new).
const OrphanAge = 10 * time.Minute

// Sweep is how often an instance looks for journals to fold.
const Sweep = 5 * time.Minute

// ErrFull means an entry did not fit in the journal.
var ErrFull = errors.New("job: completion journal full")

// key names one item of one job.
type key struct {
	job  string
	item int
}

// Journal is this process's completion journal. It owns its lock; a Put
// waits for a write that carries its entries.
type Journal struct {
	rc   regcenter.Center
	id   string // the node's name: this process's token
	path string
	log  *slog.Logger

	mu      sync.Mutex
	entries map[key][][2]int64 // the fires covered, as stored.Completed.Ran
	seq     uint64             // bumped by every change of entries
	durable uint64             // the seq the last write carried
	writing bool
	puts    int           // the puts since the last write was encoded
	shared  bool          // the last write carried more than one put (or none was made): the next waits Window
	done    chan struct{} // closed when the write in flight ends
	exists  bool          // the node is known to exist
	// version is the node's version after this process's last write of
	// it, when known: every write is a compare-and-set over it. Unknown
	// (after a write whose outcome was lost), the next write reads it.
	version int32
	known   bool
	swept   time.Time // the last sweep for orphaned journals
}

// New returns the completion journal of process (its token, the node's
// name) on rc, logging its writes to log. It writes nothing until a Put.
func New(rc regcenter.Center, process string, log *slog.Logger) *Journal {
	return &Journal{rc: rc, id: process, path: layout.Journal(process), log: log,
		entries: map[key][][2]int64{}, done: make(chan struct{}), shared: true}
}

// ID is the journal's name: the token of the process it belongs to, which
// a record written while its item is journalled names
// (stored.Completed.Journal).
func (j *Journal) ID() string { return j.id }

// Put records covers (by item) of job's completions and returns once a
// write of the journal carrying them has returned: nil when it landed. On
// an error the entries stay, and the caller writes the records instead.
// server is what the node says wrote it.
//
// ctx ends the wait; a write this put leads is bounded by timeout as well.
// A put that waits for another's write needs no timer of its own: that
// write is bounded by its leader's timeout, and at most two writes (the
// one in flight when it came, and the next, which carries it) stand
// before it. Most puts wait: one of every write's completions leads it.
func (j *Journal) Put(ctx context.Context, timeout time.Duration, server, job string, covers map[int]fireplan.Cover) error {
	j.mu.Lock()
	for it, c := range covers {
		j.entries[key{job, it}] = c.Ran()
	}
	j.seq++
	j.puts++
	want := j.seq
	for j.durable < want {
		if j.writing {
			done := j.done
			j.mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
				return ctx.Err()
			}
			j.mu.Lock()
			continue
		}
		// This put leads the next write. It waits Window first, as the
		// write in flight would have made it wait: the completions of
		// one second's fires end within milliseconds of each other, and
		// each write carries the whole journal. Not after a write that
		// carried one put alone (see Window).
		j.writing = true
		wait := j.shared
		j.mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, timeout)
		err := j.lead(wctx, wait, server, job, covers)
		cancel()
		if err != nil {
			return err
		}
		j.mu.Lock()
	}
	j.mu.Unlock()
	return nil
}

// lead makes the write a put leads (Put), with j.writing set by it: it
// waits Window (when wait: see Window), encodes the journal and writes it,
// and ends the write in flight; it returns with j.mu unlocked, and on
// success the write's seq is durable.
func (j *Journal) lead(ctx context.Context, wait bool, server, job string, covers map[int]fireplan.Cover) error {
	if wait {
		t := time.NewTimer(Window)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	j.mu.Lock()
	carried := j.puts
	j.puts = 0
	data, err := j.encodeLocked(server)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		if errors.Is(err, ErrFull) {
			for it := range covers {
				delete(j.entries, key{job, it})
			}
			j.seq++
		}
		j.endWriteLocked()
		j.mu.Unlock()
		return err
	}
	seq, exists, version, known := j.seq, j.exists, j.version, j.known
	j.mu.Unlock()
	version, err = j.write(ctx, data, exists, version, known)
	if j.log.Enabled(ctx, slog.LevelDebug) {
		j.log.Debug("journal write", "job", job, "items", len(covers), "seq", seq, "bytes", len(data), "err", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.endWriteLocked()
	if err != nil {
		j.known = false // the write may land yet: read the version first
		return err
	}
	j.exists, j.version, j.known = true, version, true
	j.durable = max(j.durable, seq)
	j.shared = carried > 1
	return nil
}

// endWriteLocked ends the write in flight: the puts waiting for it go on.
func (j *Journal) endWriteLocked() {
	j.writing = false
	close(j.done)
	j.done = make(chan struct{})
}

// encodeLocked encodes the journal node (stored.Journal), or ErrFull.
func (j *Journal) encodeLocked(server string) ([]byte, error) {
	entries := make([]stored.JournalEntry, 0, len(j.entries))
	for k, ran := range j.entries {
		entries = append(entries, stored.JournalEntry{Job: k.job, Item: k.item, Ran: ran})
	}
	data := stored.EncodeJournal(server, entries)
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrFull, len(data))
	}
	return data, nil
}

// maxRaces bounds how many times in a row a write finds the node's
// version moved: only this process writes its journal, so a second move is
// a late write of its own, and more are a registry gone wrong.
const maxRaces = 4

// write sets the journal node to data over version, the node's version
// after this process's last write when known (and the node existed),
// creating the node when it is not there, and returns its new version.
//
// Every write is a compare-and-set. A write whose answer was lost (a
// connection lost, a request abandoned on a member that stopped answering)
// may still land, much later: when a frozen etcd member wakes, say. Set
// over any version, it would put back an older journal over the writes
// made since, and a completion they carry would look unrun to the
// item's next owner. Over the version it was sent with, it fails instead
// once a later write has moved the version. After such a loss the version
// is read again; a write that finds it moved (its own late write, which
// carried less) reads it and writes over it.
func (j *Journal) write(ctx context.Context, data []byte, exists bool, version int32, known bool) (int32, error) {
	for races := 0; ; races++ {
		if exists && !known {
			_, st, err := j.rc.Get(ctx, j.path)
			switch {
			case errors.Is(err, regcenter.ErrNoNode):
				exists = false
			case err != nil:
				return 0, err
			default:
				version, known = st.Version, true
			}
		}
		if exists {
			st, err := j.rc.Set(ctx, j.path, data, version)
			switch {
			case err == nil:
				return st.Version, nil
			case errors.Is(err, regcenter.ErrNoNode):
				exists = false
			case errors.Is(err, regcenter.ErrBadVersion) && races < maxRaces:
				known = false
				continue
			default:
				return 0, err
			}
		}
		if _, err := j.rc.Create(ctx, j.path, data, regcenter.Persistent); err == nil {
			return 0, nil
		} else if !errors.Is(err, regcenter.ErrNodeExists) || races >= maxRaces {
			return 0, err
		}
		exists, known = true, false
	}
}

// Covered drops job's entries of items that a record written here now
// lists in full: through is the latest fire each record covers. The node
// keeps them until its next write; a reader adds them to a record that
// has them already.
func (j *Journal) Covered(job string, through map[int]time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for it, t := range through {
		k := key{job, it}
		ran, ok := j.entries[k]
		if ok && len(ran) > 0 && ran[len(ran)-1][1] <= t.UnixMilli() {
			delete(j.entries, k)
			j.seq++
		}
	}
}

// RemoveIfCovered deletes the journal node at shutdown, once every
// entry's record is written (none left); a journal with entries left
// stays for a sweep to fold (ReadOrphan).
func (j *Journal) RemoveIfCovered(ctx context.Context) error {
	j.mu.Lock()
	exists, left := j.exists, len(j.entries)
	if left == 0 {
		j.exists = false
	}
	j.mu.Unlock()
	if !exists || left > 0 {
		return nil
	}
	err := j.rc.Delete(ctx, j.path, -1)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	return err
}

// SweepDue reports whether a sweep for orphaned journals is due, none
// having begun within every, and if it is, notes that one begins now.
func (j *Journal) SweepDue(every time.Duration) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if time.Since(j.swept) < every {
		return false
	}
	j.swept = time.Now()
	return true
}
