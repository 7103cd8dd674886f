package records

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/lazymap"

	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/stored"
)

// Cache is what this instance knows of a job's items' completed records.
// It owns its lock, taken only in its methods, and calls nothing under it.
type Cache struct {
	mu            sync.Mutex
	completedSeen map[int]bool   // execution/{item}/completed exists
	covered       map[int]Record // items' records as last written or read here
	// written is when each item's record was last written here: a held
	// item's next records wait (pending) until it is older than the
	// record interval.
	written map[int]time.Time
	// pending holds the records of held items whose latest runs completed
	// here and are not written yet; seq numbers them, so that a flush does
	// not drop one deferred again while it was written.
	pending map[int]Pending
	seq     uint64
	// perItem is the size per item, in bytes, of the last completion
	// transaction of several items (0: none yet).
	perItem atomic.Int64
	// awaited is set when a job on this scheduler runs after this one:
	// its runs wait on these records, which are then written at every
	// run, never deferred.
	awaited atomic.Bool
	// readThrough holds, by item, the latest fire its record listed when
	// it was last read from the registry (Read): runs of another instance
	// that the fires here after the read must not run again (RanAhead).
	// nRead is its size, so that a steady fire, which finds it empty,
	// takes no lock.
	readThrough map[int]time.Time
	nRead       atomic.Int32
}

// NewCache returns a Cache that knows nothing.
func NewCache() *Cache {
	return &Cache{} // its maps are made at their first key (lazymap)
}

// SetAwaited notes that a job on this scheduler runs after this one
// (Config.After): from now on every run writes its record. It is never
// undone.
func (c *Cache) SetAwaited() { c.awaited.Store(true) }

// Awaited reports whether a job on this scheduler runs after this one.
func (c *Cache) Awaited() bool { return c.awaited.Load() }

// defaultItemBytes is the size per item a first completion assumes: a
// completed record, a running mark's delete and their paths.
const defaultItemBytes = 320

// Sized notes the size of a completion transaction of items items.
func (c *Cache) Sized(bytes, items int) {
	c.perItem.Store(int64(max(bytes/items, 1)))
}

// ItemsPerTxn is how many items a completion transaction carries: as many
// as fit in limit bytes at the size per item of the last one, with a
// tenth to spare, and at most most.
func (c *Cache) ItemsPerTxn(limit int64, most int) int {
	per := c.perItem.Load()
	if per == 0 {
		per = defaultItemBytes
	}
	return int(min(max(limit/(per+per/10), 1), int64(most)))
}

// Forget drops what is known of items' records: they were gained in a
// reshard, and another instance may have written them meanwhile.
func (c *Cache) Forget(items []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		delete(c.covered, it)
		delete(c.readThrough, it)
	}
	c.nRead.Store(int32(len(c.readThrough)))
}

// Read keeps item's record as just read.
func (c *Cache) Read(item int, rec Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lazymap.Set(&c.covered, item, rec)
	if t := rec.Through(); !t.IsZero() {
		lazymap.Set(&c.readThrough, item, t)
	} else {
		delete(c.readThrough, item)
	}
	c.nRead.Store(int32(len(c.readThrough)))
}

// ReadAhead reports whether a record read here may list a fire after the
// one it was read for (see RanAhead): false in the steady state.
func (c *Cache) ReadAhead() bool { return c.nRead.Load() > 0 }

// RanAhead returns the items whose record, as read here since (Read) and
// added to by what completed here, lists the fire at of sched: a fire of
// the item after the read that another instance has already run — its
// previous owner, which ran fires ahead of the reshard that moved the item
// (a stall held this instance's fires up), or wrote them behind. Items
// whose record as read lists no fire from at on are forgotten: no later
// fire can find one there. It returns nil, taking no lock, when no record
// read lists a fire that late (the steady state).
func (c *Cache) RanAhead(sched fireplan.Schedule, at time.Time) map[int]bool {
	if c.nRead.Load() == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var ran map[int]bool
	for it, through := range c.readThrough {
		if through.Before(at) {
			delete(c.readThrough, it)
			continue
		}
		if rec, ok := c.covered[it]; ok && !rec.UncoveredFrom(sched, at).Equal(at) {
			if ran == nil {
				ran = map[int]bool{}
			}
			ran[it] = true
		}
	}
	c.nRead.Store(int32(len(c.readThrough)))
	return ran
}

// Wrote keeps item's record as a completion just wrote it, at: what was
// pending for it is in it (the run's prior included it).
func (c *Cache) Wrote(item int, rec Record, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lazymap.Set(&c.completedSeen, item, true)
	lazymap.Set(&c.covered, item, rec)
	c.noteWritten(item, at, rec.Foreign)
	delete(c.pending, item)
}

// noteWritten notes that item's record was written at. A record that names
// another process's journal is not one this instance's completions may
// defer behind (Recent): theirs would go to a journal no reader of the
// node reads, so the next one writes the record, naming this process's.
func (c *Cache) noteWritten(item int, at time.Time, foreign bool) {
	if foreign {
		delete(c.written, item)
		return
	}
	lazymap.Set(&c.written, item, at)
}

// Marked notes the marks of items made anew (those not in held): the first
// record under a new mark is written at its run, whenever the last was.
func (c *Cache) Marked(items []int, held map[int]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		if !held[it] {
			delete(c.written, it)
		}
	}
}

// Recent reports whether item's record was written here less than every
// before now: a completion of it while it is held may defer its record.
func (c *Cache) Recent(item int, now time.Time, every time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.written[item]
	return ok && now.Sub(t) < every
}

// Deferred keeps item's record as a completion would have written it,
// without writing it: rec has the new cover and the version the node
// still has; m is the run's record.
func (c *Cache) Deferred(item int, rec Record, m stored.Completed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lazymap.Set(&c.completedSeen, item, true)
	lazymap.Set(&c.covered, item, rec)
	c.seq++
	lazymap.Set(&c.pending, item, Pending{Mark: m, Cover: rec.Cover, Version: rec.Version, seq: c.seq, Item: item})
}

// PendingCover returns what item's deferred record covers, if one is
// pending.
func (c *Cache) PendingCover(item int) (fireplan.Cover, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[item]
	return p.Cover, ok
}

// HasPending reports whether any record is deferred.
func (c *Cache) HasPending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// PendingOf returns the deferred records that pick selects (all of them
// when pick is nil), by item; pick is given each item and when its record
// was last written here, under the Cache's lock: it must not call the
// Cache.
func (c *Cache) PendingOf(pick func(item int, written time.Time) bool) []Pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Pending, 0, len(c.pending))
	for it, p := range c.pending {
		if pick == nil || pick(it, c.written[it]) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Pending) int { return a.Item - b.Item })
	return out
}

// Flushed notes that p, deferred, was written at: the node has version to
// now (it had from), covers cov and names journal (foreign: another
// process's, and then the write does not count as recent). A record deferred again meanwhile
// stays pending, and a version another write here moved past is left
// alone.
func (c *Cache) Flushed(p Pending, cov fireplan.Cover, from, to int32, at time.Time, journal string, foreign bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lazymap.Set(&c.completedSeen, p.Item, true)
	c.noteWritten(p.Item, at, foreign)
	cur, ok := c.covered[p.Item]
	if q, still := c.pending[p.Item]; still && q.seq == p.seq {
		delete(c.pending, p.Item)
		lazymap.Set(&c.covered, p.Item, Record{Cover: cov, Version: to, Versioned: true, Journal: journal, Foreign: foreign})
		return
	}
	if ok && cur.Versioned && cur.Version == from {
		cur.Version, cur.Journal, cur.Foreign = to, journal, foreign
		lazymap.Set(&c.covered, p.Item, cur)
	}
	if q, still := c.pending[p.Item]; still && q.Version == from {
		q.Version = to
		lazymap.Set(&c.pending, p.Item, q)
	}
}

// Lookup returns item's record as known here.
func (c *Cache) Lookup(item int) (Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.covered[item]
	return rec, ok
}

// Known returns the records of items known here, read or written (nil
// when the Cache knows no record at all): facts (fireplan.Cover), which a
// completion adds its own run to.
func (c *Cache) Known(items []int) map[int]Record { return c.of(items, false) }

// Provable returns the records of items known here with their versions,
// read from no other process's journal (nil when the Cache knows no
// record at all): those a marking transaction may prove by version.
func (c *Cache) Provable(items []int) map[int]Record { return c.of(items, true) }

func (c *Cache) of(items []int, versioned bool) map[int]Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.covered) == 0 {
		return nil
	}
	out := make(map[int]Record, len(items))
	for _, it := range items {
		if rec, ok := c.covered[it]; ok && (rec.Versioned && !rec.Foreign || !versioned) {
			out[it] = rec
		}
	}
	return out
}

// Seen notes whether item's completed node exists.
func (c *Cache) Seen(item int, exists bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lazymap.Set(&c.completedSeen, item, exists)
}

// Exists reports whether item's completed node is known to exist.
func (c *Cache) Exists(item int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.completedSeen[item]
}
