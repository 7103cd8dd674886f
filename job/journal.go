package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// The completion journal. With the default record interval, a completion
// of an item whose running mark this instance holds does not write the
// item's completed record: it puts what the record would say in this
// process's journal, one node for every job of the scheduler
// (/.journals/{process}), written as soon as no earlier write of it is in
// flight. The completions of one second's fires of all the jobs share
// one or two writes, and the records are written behind, once a journal
// record interval (recordflush.go), and before every release of a mark.
//
// A record written while its item is journalled names the journal
// (stored.Completed.Journal), and every read of a record that names another
// process's journal adds what that journal says of the item
// (readRecordNode): a crash leaves the record behind by up to an
// interval, but not the journal, so the next owner of the item, a
// failover claimer or a make-up run finds every completed fire, and runs
// again only what was in flight — a run, or a completion whose journal
// write had not returned. A record known here is proved current by its
// version alone only when it names no other process's journal
// (records.Cache.Provable).
//
// The journal of a process that crashed stays until some instance folds
// it: each instance looks, at most once per journalSweep, for journals
// not written for journalOrphanAge, adds what each says to the records
// that still name it, and deletes it. A process deletes its own journal
// when it shuts down, after its last records are written.

// journalRecordInterval is how long a journalled completion may leave the
// item's record behind: its record is written at the first completion
// after that, by the reconcile round once an item has waited that long,
// and before its mark is released.
const journalRecordInterval = 20 * time.Second

// journalWindow is how long the first completion after a journal write
// waits for others to share the next one: a completion returns within it
// and a write's round trip.
const journalWindow = 10 * time.Millisecond

// maxJournalBytes bounds the journal node: a completion that would make
// it larger writes its record instead.
const maxJournalBytes = 256 << 10

// journalOrphanAge is how long a journal must have gone unwritten before
// another instance folds it into the records and deletes it: far beyond
// any record interval, so that a live process's journal holds only
// entries its records already cover by then (it folds nothing new).
const journalOrphanAge = 10 * time.Minute

// journalSweep is how often an instance looks for journals to fold.
const journalSweep = 5 * time.Minute

// errJournalFull means an entry did not fit in the journal.
var errJournalFull = errors.New("job: completion journal full")

// journalKey names one item of one job.
type journalKey struct {
	job  string
	item int
}

// journal is this process's completion journal (see above). It owns its
// lock; a put waits for a write that carries its entries.
type journal struct {
	rc   regcenter.Center
	id   string // the node's name: this process's token
	path string
	log  *slog.Logger

	mu      sync.Mutex
	entries map[journalKey][][2]int64 // the fires covered, as stored.Completed.Ran
	seq     uint64                    // bumped by every change of entries
	durable uint64                    // the seq the last write carried
	writing bool
	done    chan struct{} // closed when the write in flight ends
	exists  bool          // the node is known to exist
	swept   time.Time     // the last sweep for orphaned journals
}

func newJournal(rc regcenter.Center, process string, log *slog.Logger) *journal {
	return &journal{rc: rc, id: process, path: layout.Journal(process), log: log,
		entries: map[journalKey][][2]int64{}, done: make(chan struct{})}
}

// put records covers (by item) of job's completions and returns once a
// write of the journal carrying them has returned: nil when it landed. On
// an error the entries stay, and the caller writes the records instead.
func (j *journal) put(ctx context.Context, server, job string, covers map[int]cover) error {
	j.mu.Lock()
	for it, c := range covers {
		j.entries[journalKey{job, it}] = c.Ran()
	}
	j.seq++
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
		// This put leads the next write. It waits journalWindow first,
		// as the write in flight would have made it wait: the completions
		// of one second's fires end within milliseconds of each other,
		// and each write carries the whole journal.
		j.writing = true
		j.mu.Unlock()
		t := time.NewTimer(journalWindow)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		j.mu.Lock()
		data, err := j.encodeLocked(server)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			if errors.Is(err, errJournalFull) {
				for it := range covers {
					delete(j.entries, journalKey{job, it})
				}
				j.seq++
			}
			j.writing = false
			close(j.done)
			j.done = make(chan struct{})
			j.mu.Unlock()
			return err
		}
		seq, exists := j.seq, j.exists
		j.mu.Unlock()
		err = j.write(ctx, data, exists)
		if j.log.Enabled(ctx, slog.LevelDebug) {
			j.log.Debug("journal write", "job", job, "items", len(covers), "seq", seq, "bytes", len(data), "err", err)
		}
		j.mu.Lock()
		j.writing = false
		close(j.done)
		j.done = make(chan struct{})
		if err != nil {
			j.mu.Unlock()
			return err
		}
		j.exists = true
		j.durable = max(j.durable, seq)
	}
	j.mu.Unlock()
	return nil
}

// encodeLocked encodes the journal node (stored.Journal), or
// errJournalFull.
func (j *journal) encodeLocked(server string) ([]byte, error) {
	doc := stored.Journal{Server: server}
	for k, ran := range j.entries {
		doc.Put(k.job, k.item, ran)
	}
	data := doc.Encode()
	if len(data) > maxJournalBytes {
		return nil, fmt.Errorf("%w: %d bytes", errJournalFull, len(data))
	}
	return data, nil
}

// write sets the journal node to data, creating it when it is not there.
func (j *journal) write(ctx context.Context, data []byte, exists bool) error {
	if exists {
		_, err := j.rc.Set(ctx, j.path, data, -1)
		if !errors.Is(err, regcenter.ErrNoNode) {
			return err
		}
	}
	_, err := j.rc.Create(ctx, j.path, data, regcenter.Persistent)
	if errors.Is(err, regcenter.ErrNodeExists) {
		_, err = j.rc.Set(ctx, j.path, data, -1)
	}
	return err
}

// covered drops job's entries of items that a record written here now
// lists in full: through is the latest fire each record covers. The node
// keeps them until its next write; a reader adds them to a record that
// has them already.
func (j *journal) covered(job string, through map[int]time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for it, t := range through {
		k := journalKey{job, it}
		ran, ok := j.entries[k]
		if ok && len(ran) > 0 && ran[len(ran)-1][1] <= t.UnixMilli() {
			delete(j.entries, k)
			j.seq++
		}
	}
}

// removeIfCovered deletes the journal node at shutdown, once every
// entry's record is written (none left); a journal with entries left
// stays for a sweep to fold (sweepJournals).
func (j *journal) removeIfCovered(ctx context.Context) error {
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

// journalled adds to rec, read from item's completed node, what journal
// id, another process's, says of the item: nothing when the journal or
// the entry is not there, or does not decode (a journal is only ever an
// addition to a record).
func (r *runner) journalled(ctx context.Context, item int, id string, rec record) (record, error) {
	data, _, err := r.rc.Get(ctx, layout.Journal(id))
	if errors.Is(err, regcenter.ErrNoNode) {
		return rec, nil
	}
	if err != nil {
		return rec, err
	}
	doc, err := stored.DecodeJournal(data)
	if err != nil {
		return rec, nil
	}
	ran := doc.Entry(r.name, item)
	if len(ran) == 0 {
		return rec, nil
	}
	sched, _, serr := r.config().Schedule()
	if serr != nil {
		return rec, nil
	}
	rec.Cover = rec.Cover.Union(sched, stored.RanCover(ran))
	return rec, nil
}

// sweepJournals folds every journal that has not been written for
// journalOrphanAge into the records that name it, and deletes it: the
// journal of a process that crashed. At most once per journalSweep.
func (s *Scheduler) sweepJournals(ctx context.Context) {
	j := s.journal
	if j == nil {
		return
	}
	j.mu.Lock()
	if time.Since(j.swept) < s.opts.journalSweep {
		j.mu.Unlock()
		return
	}
	j.swept = time.Now()
	j.mu.Unlock()
	ids, err := s.rc.Children(ctx, layout.Journals)
	if err != nil {
		if !errors.Is(err, regcenter.ErrNoNode) {
			s.log.Debug("listing completion journals", "err", err)
		}
		return
	}
	for _, id := range ids {
		if id == j.id {
			continue
		}
		if err := s.foldJournal(ctx, id); err != nil {
			s.log.Warn("folding a completion journal left by a process that is gone", "journal", id, "err", err)
		}
	}
}

// foldJournal folds journal id into the records of the scheduler's jobs
// that name it, and deletes it, if it has not been written for
// journalOrphanAge. Entries of jobs this scheduler does not run are
// folded by an instance that runs them; a journal is deleted only when
// every job it names is one of this scheduler's.
func (s *Scheduler) foldJournal(ctx context.Context, id string) error {
	data, st, err := s.rc.Get(ctx, layout.Journal(id))
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	if time.Since(st.Mtime) < s.opts.journalOrphanAge {
		return nil
	}
	doc, derr := stored.DecodeJournal(data)
	all := true
	if derr == nil {
		for name := range doc.Jobs {
			r := s.runnerOf(name)
			if r == nil {
				all = false
				continue
			}
			sched, _, err := r.config().Schedule()
			if err != nil {
				all = false
				continue
			}
			for it, ran := range doc.Items(name) {
				if err := r.foldEntry(ctx, sched, id, it, ran); err != nil {
					return err
				}
			}
		}
	}
	if !all {
		return nil
	}
	err = s.rc.Delete(ctx, layout.Journal(id), st.Version)
	if errors.Is(err, regcenter.ErrNoNode) || errors.Is(err, regcenter.ErrBadVersion) {
		return nil // gone, or written again: its process lives
	}
	return err
}

// foldEntry adds ran, journal id's entry for item, to the item's record
// when the record still names that journal.
func (r *runner) foldEntry(ctx context.Context, sched cron.Schedule, id string, item int, ran [][2]int64) error {
	path := r.paths.ItemNode(item, layout.Completed)
	for attempt := 0; attempt < 8; attempt++ {
		data, st, err := r.rc.Get(ctx, path)
		if errors.Is(err, regcenter.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		m, err := stored.DecodeCompleted(data)
		if err != nil || m.Journal != id {
			return nil // rewritten since by the item's next owner, or garbage
		}
		c := m.Cover().Union(sched, stored.RanCover(ran))
		m.Fire, m.Ran, m.Floor, m.Journal = c.Through().UnixMilli(), c.Ran(), 0, ""
		_, err = r.rc.Set(ctx, path, m.Marshal(), st.Version)
		if !errors.Is(err, regcenter.ErrBadVersion) {
			return err
		}
	}
	return fmt.Errorf("folding into the record of item %d: it kept changing", item)
}

// journalDeferred puts the records c deferred in the completion journal,
// and returns once a write of the journal carries them. When the journal
// cannot take them (full, or the write failed), their records are written
// now instead: a deferred completion is never left only in memory.
func (r *runner) journalDeferred(cfg *spec, c *completion) {
	if !c.journalled || len(c.deferred) == 0 {
		return
	}
	covers := make(map[int]cover, len(c.deferred))
	for i := range c.deferred {
		covers[c.batch[i].item] = c.recorded[i]
	}
	ctx, cancel := context.WithTimeout(r.ctx.record, max(time.Minute, 10*r.sessionTimeout()))
	defer cancel()
	err := r.s.journal.put(ctx, r.serverID(), r.name, covers)
	if err == nil {
		return
	}
	r.log.Debug("completion journal not written; writing the records", "items", len(covers), "err", err)
	if ferr := r.flushRecords(ctx, func(item int, _ time.Time) bool { _, ok := covers[item]; return ok }, false); ferr != nil {
		r.log.Warn("writing completion records the journal could not take; the runs they cover may run again", "err", errors.Join(err, ferr))
	}
}

// journalCovered drops from the journal what the records c wrote list.
func (r *runner) journalCovered(c *completion) {
	through := map[int]time.Time{}
	for i, b := range c.batch {
		if _, deferred := c.deferred[i]; !deferred && !c.recorded[i].IsZero() {
			through[b.item] = c.recorded[i].Through()
		}
	}
	if len(through) > 0 {
		r.s.journal.covered(r.name, through)
	}
}
