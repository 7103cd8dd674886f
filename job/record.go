package job

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/shardjob/shardjob/job/internal/fireplan"
)

// cover is what an item's completed record says ran (fireplan.Cover).
type cover = fireplan.Cover

// record is an item's completed node as this instance last read or wrote
// it: what it says ran and, when versioned, the node's version. A
// completion writes its record over that version only, so that what
// another instance wrote meanwhile (a failover run of the item, a previous
// owner paying its debt) is read and kept, not overwritten. The zero record
// knows nothing.
type record struct {
	cover
	version   int32
	versioned bool
	// failed are the recent failed runs the record lists (see
	// completedMark.Failed).
	failed []failedRun
	// foreign is set on a record read from a node that names another
	// process's completion journal (journal.go): what was read is that
	// node with the journal's entry added, which its version does not
	// prove (recordCache.of).
	foreign bool
}

// maxFailed bounds the failed runs an item's record keeps: the newest,
// which are what a dependent checking late asks about.
const maxFailed = 8

// maxFailedError bounds the error each listed failed run keeps; the
// latest run's error is kept whole (up to maxRecordedError) in Error.
const maxFailedError = 256

// failedRun is one recent run of an item that failed: the fires it stood
// for, First through Last (Unix ms), and its error, cut short.
type failedRun struct {
	First int64  `json:"first"`
	Last  int64  `json:"last"`
	Error string `json:"error"`
}

// failedAfter is the failed runs a record lists once a run for the fires
// first through last has ended with err, over prior's list: the run added
// if it failed; the earlier entries it stood for again dropped if it
// succeeded (a fire run again after a crash: its latest result counts);
// those older than cov's oldest span dropped (the record no longer speaks
// of those fires); the newest maxFailed kept. Nil when none.
func failedAfter(prior []failedRun, cov cover, first, last time.Time, err error) []failedRun {
	if len(prior) == 0 && err == nil {
		return nil
	}
	f, l := first.UnixMilli(), last.UnixMilli()
	var oldest int64
	if spans := cov.Spans(); len(spans) > 0 {
		oldest = spans[0].First.UnixMilli()
	}
	out := make([]failedRun, 0, len(prior)+1)
	for _, p := range prior {
		if p.Last < oldest || (err == nil && p.First >= f && p.Last <= l) || (err != nil && p.First == f && p.Last == l) {
			continue
		}
		out = append(out, p)
	}
	if err != nil {
		out = append(out, failedRun{First: f, Last: l, Error: cutError(recordedError(err), maxFailedError)})
	}
	slices.SortFunc(out, func(a, b failedRun) int { return cmp.Compare(a.First, b.First) })
	if len(out) > maxFailed {
		out = out[len(out)-maxFailed:]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// failureOf returns the error of the first run in failed, or of m's own
// run, that stood for a fire from first through last ("" if none failed).
// m's Error is its latest run's, kept whole.
func failureOf(m completedMark, first, last time.Time) (fire time.Time, msg string) {
	f, l := first.UnixMilli(), last.UnixMilli()
	for _, r := range m.Failed {
		if r.Last >= f && r.First <= l {
			if r.Last == m.Fire && m.Error != "" {
				return time.UnixMilli(max(r.First, f)), m.Error
			}
			return time.UnixMilli(max(r.First, f)), r.Error
		}
	}
	if len(m.Failed) == 0 && m.Error != "" && m.Fire >= f {
		// A record written before Failed existed: its latest run's error.
		return time.UnixMilli(m.Fire), m.Error
	}
	return time.Time{}, ""
}

// cutError cuts msg at n bytes, on a character boundary.
func cutError(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return msg[:n] + "…"
}

// coverOf reads a completed mark: its runs of covered fires, or, for a mark
// written without them, the one run from Floor (or Since) through Fire.
func coverOf(m completedMark) cover {
	if len(m.Ran) > 0 {
		spans := make([]fireplan.Span, 0, len(m.Ran))
		for _, s := range m.Ran {
			if s[0] > 0 {
				spans = append(spans, fireplan.Span{First: time.UnixMilli(s[0]), Last: time.UnixMilli(s[1])})
			}
		}
		return fireplan.CoverOf(spans...)
	}
	first := m.Fire
	for _, t := range []int64{m.Since, m.Floor} {
		if t > 0 && t < first {
			first = t
		}
	}
	return fireplan.CoverOf(fireplan.Span{First: time.UnixMilli(first), Last: time.UnixMilli(m.Fire)})
}

// maxRecordedError bounds the error an item's completed record keeps: the
// record is written with the item's other records in one transaction, and
// an error of any size a job returns must not make it too large to write
// (the fires it covers would then look unrun).
const maxRecordedError = 4 << 10

// recordedError is err's message as a completed record keeps it: cut at
// maxRecordedError bytes, on a character boundary, saying how much was
// left out.
func recordedError(err error) string {
	msg := err.Error()
	if len(msg) <= maxRecordedError {
		return msg
	}
	cut := maxRecordedError
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + fmt.Sprintf("… (%d bytes more)", len(msg)-cut)
}

// completedMark records the latest fire an item's executions cover. A
// misfire or failover run that began at B makes up for every fire from Since
// to the last fire at or before B; Fire is that last fire.
type completedMark struct {
	Server string `json:"server"`
	Fire   int64  `json:"fire"`
	Since  int64  `json:"since,omitempty"`
	// Ran lists the runs of consecutive fires known to have been covered,
	// oldest first, each as [first, last] (see cover): this execution's and
	// what earlier records said. A make-up run runs only fires it does not
	// list.
	Ran [][2]int64 `json:"ran,omitempty"`
	// Floor is read from records written before Ran existed: every fire
	// from Floor through Fire had run.
	Floor int64  `json:"floor,omitempty"`
	Kind  Kind   `json:"kind"`
	Begin int64  `json:"begin"`
	End   int64  `json:"end"`
	Error string `json:"error,omitempty"`
	// Failed lists the item's recent runs that failed, oldest first (at
	// most maxFailed, within the fires Ran speaks of): a dependent checking
	// a fire after later ones ran reads that fire's result here, not the
	// latest run's in Error.
	Failed []failedRun `json:"failed,omitempty"`
	// Journal names the completion journal (journal.go) of the process
	// that wrote the record while it held the item: fires completed after
	// the record was written are in that journal.
	Journal string `json:"journal,omitempty"`
}

// recordCache is what this instance knows of the items' completion
// records. It owns its lock, taken only in this file, and takes no other
// under it.
type recordCache struct {
	mu            sync.Mutex
	completedSeen map[int]bool   // execution/{item}/completed exists
	covered       map[int]record // items' records as last written or read here
	// written is when each item's record was last written here: a held
	// item's next records wait (pending) until it is older than the
	// scheduler's record interval (see recordflush.go).
	written map[int]time.Time
	// pending holds the records of held items whose latest runs completed
	// here and are not written yet; seq numbers them, so that a flush does
	// not drop one deferred again while it was written.
	pending map[int]pendingRecord
	seq     uint64
	// perItem is the size per item, in bytes, of the last completion
	// transaction of several items (0: none yet).
	perItem atomic.Int64
	// awaited is set when a job on this scheduler runs after this one
	// (Config.After): its runs wait on these records, which are then
	// written at every run, never deferred.
	awaited atomic.Bool
}

// defaultItemBytes is the size per item a first completion assumes: a
// completed record, a running mark's delete and their paths.
const defaultItemBytes = 320

// sized notes the size of a completion transaction of items items.
func (c *recordCache) sized(bytes, items int) {
	c.perItem.Store(int64(max(bytes/items, 1)))
}

// itemsPerTxn is how many items a completion transaction carries: as many
// as fit in completionBytes at the size per item of the last one, with a
// tenth to spare, and at most completionsPerTxn.
func (c *recordCache) itemsPerTxn() int {
	per := c.perItem.Load()
	if per == 0 {
		per = defaultItemBytes
	}
	return int(min(max(completionBytes/(per+per/10), 1), completionsPerTxn))
}

func newRecordCache() recordCache {
	return recordCache{completedSeen: map[int]bool{}, covered: map[int]record{}, written: map[int]time.Time{}, pending: map[int]pendingRecord{}}
}

// pendingRecord is a held item's record deferred here: what the latest
// run's completion would have written (its mark, the record's cover) over
// the version the node had then.
type pendingRecord struct {
	mark    completedMark
	cover   cover
	version int32
	seq     uint64
	item    int
}

// forget drops what is known of items' records: they were gained in a
// reshard, and another instance may have written them meanwhile.
func (c *recordCache) forget(items []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		delete(c.covered, it)
	}
}

// read keeps item's record as just read.
func (c *recordCache) read(item int, rec record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.covered[item] = rec
}

// wrote keeps item's record as a completion just wrote it, at: what was
// pending for it is in it (the run's prior included it).
func (c *recordCache) wrote(item int, rec record, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.completedSeen[item] = true
	c.covered[item] = rec
	c.written[item] = at
	delete(c.pending, item)
}

// marked notes the marks of items made anew (those not in held): the first
// record under a new mark is written at its run, whenever the last was.
func (c *recordCache) marked(items []int, held map[int]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		if !held[it] {
			delete(c.written, it)
		}
	}
}

// recent reports whether item's record was written here less than every
// before now: a completion of it while it is held may defer its record.
func (c *recordCache) recent(item int, now time.Time, every time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.written[item]
	return ok && now.Sub(t) < every
}

// deferred keeps item's record as a completion would have written it,
// without writing it: rec has the new cover and the version the node
// still has; m is the run's mark.
func (c *recordCache) deferred(item int, rec record, m completedMark) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.completedSeen[item] = true
	c.covered[item] = rec
	c.seq++
	c.pending[item] = pendingRecord{mark: m, cover: rec.cover, version: rec.version, seq: c.seq, item: item}
}

// pendingCover returns what item's deferred record covers, if one is
// pending.
func (c *recordCache) pendingCover(item int) (cover, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[item]
	return p.cover, ok
}

// hasPending reports whether any record is deferred.
func (c *recordCache) hasPending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// pendingOf returns the deferred records that pick selects (all of them
// when pick is nil), by item; pick is given each item and when its record
// was last written here.
func (c *recordCache) pendingOf(pick func(item int, written time.Time) bool) []pendingRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]pendingRecord, 0, len(c.pending))
	for it, p := range c.pending {
		if pick == nil || pick(it, c.written[it]) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b pendingRecord) int { return a.item - b.item })
	return out
}

// flushed notes that p, deferred, was written at: the node has version to
// now and covers cov. A record deferred again meanwhile stays pending, and
// a version another write here moved past is left alone.
func (c *recordCache) flushed(p pendingRecord, cov cover, from, to int32, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.completedSeen[p.item] = true
	c.written[p.item] = at
	cur, ok := c.covered[p.item]
	if q, still := c.pending[p.item]; still && q.seq == p.seq {
		delete(c.pending, p.item)
		c.covered[p.item] = record{cover: cov, version: to, versioned: true}
		return
	}
	if ok && cur.versioned && cur.version == from {
		cur.version = to
		c.covered[p.item] = cur
	}
	if q, still := c.pending[p.item]; still && q.version == from {
		q.version = to
		c.pending[p.item] = q
	}
}

// lookup returns item's record as known here.
func (c *recordCache) lookup(item int) (record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.covered[item]
	return rec, ok
}

// of returns the known records of items (nil when none is known); with
// versioned, only those read or written with their version.
func (c *recordCache) of(items []int, versioned bool) map[int]record {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.covered) == 0 {
		return nil
	}
	out := make(map[int]record, len(items))
	for _, it := range items {
		if rec, ok := c.covered[it]; ok && (rec.versioned && !rec.foreign || !versioned) {
			out[it] = rec
		}
	}
	return out
}

// seen notes whether item's completed node exists.
func (c *recordCache) seen(item int, exists bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.completedSeen[item] = exists
}

// exists reports whether item's completed node is known to exist.
func (c *recordCache) exists(item int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.completedSeen[item]
}

// marshal encodes m as json.Marshal does, byte for byte, without its
// reflection: a completion writes one per item.
func (m *completedMark) marshal() []byte {
	b := make([]byte, 0, 96+len(m.Server)+len(m.Kind)+len(m.Error)+40*len(m.Ran)+(60+maxFailedError)*len(m.Failed))
	b = append(b, `{"server":`...)
	b = appendJSONString(b, m.Server)
	b = append(b, `,"fire":`...)
	b = strconv.AppendInt(b, m.Fire, 10)
	if m.Since != 0 {
		b = append(b, `,"since":`...)
		b = strconv.AppendInt(b, m.Since, 10)
	}
	if len(m.Ran) > 0 {
		b = append(b, `,"ran":[`...)
		for i, s := range m.Ran {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendInt(b, s[0], 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, s[1], 10)
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	if m.Floor != 0 {
		b = append(b, `,"floor":`...)
		b = strconv.AppendInt(b, m.Floor, 10)
	}
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, string(m.Kind))
	b = append(b, `,"begin":`...)
	b = strconv.AppendInt(b, m.Begin, 10)
	b = append(b, `,"end":`...)
	b = strconv.AppendInt(b, m.End, 10)
	if m.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, m.Error)
	}
	if len(m.Failed) > 0 {
		b = append(b, `,"failed":[`...)
		for i, f := range m.Failed {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"first":`...)
			b = strconv.AppendInt(b, f.First, 10)
			b = append(b, `,"last":`...)
			b = strconv.AppendInt(b, f.Last, 10)
			b = append(b, `,"error":`...)
			b = appendJSONString(b, f.Error)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if m.Journal != "" {
		b = append(b, `,"journal":`...)
		b = appendJSONString(b, m.Journal)
	}
	return append(b, '}')
}

// appendJSONString appends s as json.Marshal encodes a string. Plain
// printable ASCII (server ids, kinds, most errors) is copied as it is;
// anything json escapes goes through json itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string: cannot fail
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
