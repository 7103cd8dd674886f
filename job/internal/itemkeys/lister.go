package itemkeys

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Timing of the leader's reads.
const (
	// Lead is how long before a fire the leader reads the source.
	Lead = 2 * time.Second
	// Margin is how long before a fire a list must be stored to be in
	// force for it (instances read it as they run the fire).
	Margin = 500 * time.Millisecond
	// Retry is how often the source is tried until a list is stored.
	Retry = 250 * time.Millisecond
)

// Source is what the leader reads the keys from (job.ItemLister).
type Source func(ctx context.Context) ([]string, error)

// Job is what a pass reads of the job's config: its item count and the
// fire after a time; ok false when the job has no schedule to follow
// (disabled, or a schedule that does not parse).
type Job struct {
	Total int
	Next  func(time.Time) time.Time
	OK    bool
}

// Lister is the leader's reading of a job's item source ahead of each
// fire: the source is called (bounded by Timeout) on the instance that
// leads the job, and a changed list stored over the version read, fenced
// on that leadership. Every other instance does nothing but, until a list
// is stored, look for one.
type Lister struct {
	RC      regcenter.Center
	Paths   layout.Job
	Source  Source
	Timeout time.Duration // one call of Source
	// Coord bounds a registry read of the instance that does not lead.
	Coord time.Duration
	Job   func() Job
	// Prepare readies the job to lead (joins its election); Leading and
	// Fence are its leadership.
	Prepare func() error
	Leading func() bool
	Fence   func() (regcenter.Op, error)
	Session func() *regcenter.Session
	Now     func() time.Time
	// Sleep waits until a time and reports true, or false when the job
	// stops first.
	Sleep func(at time.Time) bool
	// Closed reports whether the job stops.
	Closed func() bool
	Log    *slog.Logger
	// Listed is told of a list stored: its keys and what changed; Kept
	// of why a read kept the last list (once until the reason changes or
	// a read succeeds).
	Listed func(keys int, detail string)
	Kept   func(err error)
	// ReportBad reports a stored value that does not decode.
	ReportBad func(p string, st regcenter.Stat, data []byte, msg string, args ...any)
}

// Run reads the source ahead of each fire until the job stops or has no
// schedule to follow.
func (l *Lister) Run() {
	// Until a list is stored, a pass comes round every Retry rather than
	// ahead of the next fire: the job's first fires need a list, and its
	// start comes before its election.
	pending := true
	var kept string // why the last read kept the list, told once
	for !l.Closed() {
		j := l.Job()
		if !j.OK {
			return
		}
		next := j.Next(l.Now())
		if next.IsZero() {
			return
		}
		if !pending && !l.Sleep(next.Add(-Lead)) {
			return
		}
		if err := l.Prepare(); err != nil {
			l.Log.Warn("item source: preparing to lead", "err", err)
		}
		if l.Leading() {
			// Led once: a source that failed is tried again ahead of
			// the next fire, not every Retry.
			pending = false
			switch err := l.refresh(j); {
			case err == nil:
				kept = ""
			case err.Error() != kept:
				kept = err.Error()
				l.Log.Warn("item source: keeping the last list of item keys", "err", err)
				l.Kept(err)
			}
		} else if pending {
			pending = !l.stored()
		}
		wake := next
		if pending {
			wake = l.Now().Add(Retry)
		}
		if !l.Sleep(wake) {
			return
		}
	}
}

// stored reports whether the job's item keys are stored (false when the
// registry cannot say).
func (l *Lister) stored() bool {
	ctx, cancel := context.WithTimeout(l.Session().Ctx(), l.Coord)
	defer cancel()
	ok, _, err := l.RC.Exists(ctx, l.Paths.ItemKeys())
	return ok && err == nil
}

// refresh reads the source and stores the list it returns, changed, in
// force from the first fire it can be for. It returns why it kept the
// last list: the source failed, or its list cannot be stored.
func (l *Lister) refresh(j Job) error {
	ctx, cancel := context.WithTimeout(l.Session().Ctx(), l.Timeout)
	defer cancel()
	keys, err := call(ctx, l.Source)
	if err != nil {
		return fmt.Errorf("reading the item source: %w", err)
	}
	p := l.Paths.ItemKeys()
	data, st, err := l.RC.Get(ctx, p)
	stored := err == nil
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		l.Log.Warn("item source: reading the stored list", "err", err)
		return nil
	}
	var doc Doc
	if stored {
		if doc, err = Decode(data); err != nil {
			l.ReportBad(p, st, data, "garbage in the item keys; the leader stores a new list", "err", err)
			doc = Doc{}
		}
	}
	var from time.Time // the first list: in force at once
	if stored {
		from = j.Next(l.Now().Add(Margin))
	}
	out, ch, err := Assign(doc, keys, j.Total, from)
	if err != nil {
		return err
	}
	if stored && ch.Same() && len(doc.Cur.Keys) == j.Total {
		return nil
	}
	enc, err := Encode(out)
	if err != nil {
		return err
	}
	fence, err := l.Fence()
	if err != nil {
		return nil // no longer the leader: the new one reads the source
	}
	write := regcenter.Op(regcenter.CreateOp{Path: p, Data: enc})
	if stored {
		write = regcenter.SetOp{Path: p, Data: enc, Version: st.Version}
	}
	if err := l.RC.Multi(ctx, fence, write); err != nil {
		l.Log.Warn("item source: storing the list", "err", err)
		return nil
	}
	n := out.Cur.Count()
	when := "now"
	if !out.Cur.From.IsZero() {
		when = out.Cur.From.UTC().Format(time.RFC3339Nano)
	}
	l.Log.Info("item keys listed", "keys", n, "added", len(ch.Added), "removed", len(ch.Removed), "from", when)
	l.Listed(n, fmt.Sprintf("%d keys, %d added, %d removed, from %s", n, len(ch.Added), len(ch.Removed), when))
	return nil
}

// call calls the source, a panic being its error.
func call(ctx context.Context, s Source) (keys []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("item source panicked: %v", p)
		}
	}()
	return s(ctx)
}

// Read returns, for a fire's items, the key of each in the list in force
// at its fire (fireOf): an item without one has none in the map. No list
// stored yet: no item has a key. A stored list that does not decode is
// reported (reportBad) and an error wrapping ErrBadDoc.
func Read(ctx context.Context, rc regcenter.Center, paths layout.Job, items []int, fireOf func(int) time.Time,
	reportBad func(p string, st regcenter.Stat, data []byte, msg string, args ...any)) (map[int]string, error) {
	p := paths.ItemKeys()
	data, st, err := rc.Get(ctx, p)
	if errors.Is(err, regcenter.ErrNoNode) {
		return map[int]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	doc, err := Decode(data)
	if err != nil {
		reportBad(p, st, data, "garbage in the item keys; the runs that need them fail", "err", err)
		return nil, err
	}
	keys := make(map[int]string, len(items))
	for _, it := range items {
		if list := doc.At(fireOf(it)); it < len(list) {
			keys[it] = list[it]
		}
	}
	return keys, nil
}
