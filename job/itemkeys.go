package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job/internal/itemkeys"
	"github.com/shardjob/shardjob/regcenter"
)

// Items from data (job/internal/itemkeys): a job that implements
// ItemLister has its items' keys read from its source by the job's
// leader, ahead of each fire, and stored in the job's item-keys node;
// every instance reads the list in force at a fire's time when it runs
// the fire, and hands each run its item's key (ShardingContext.ItemKey).

// ItemLister is a Job whose items come from data (tenants in a table,
// files in a bucket): ListItems returns the keys, and each key is an item.
// The job's leader calls it ahead of every fire (bounded by
// ItemListTimeout) and gives each key an item number: a key keeps its
// item while it is listed, so placement, sticky by item, is sticky by
// key, and a key that leaves frees its item for the next new key. The
// list may hold at most ShardingTotalCount keys; items without a key run
// nothing. A list read for a fire is in force from that fire on, on every
// instance (from the fire after, when it was read too late for the
// first). A read that fails, or returns a list that cannot be stored (an
// invalid or repeated key, more keys than items, a list over
// itemkeys.MaxDocBytes), keeps the last list in force and raises
// EventItemsKept.
//
// Implement it on the value given to Scheduler.Add: a wrapper that does
// not (errhandler.Wrap, say) hides it.
type ItemLister interface {
	Job
	ListItems(ctx context.Context) ([]string, error)
}

// ItemListTimeout bounds one call of ItemLister.ListItems.
const ItemListTimeout = 30 * time.Second

// MaxItemKeyLength is the longest item key, in bytes. A key is also
// valid UTF-8 without control characters, and listed once.
const MaxItemKeyLength = itemkeys.MaxKeyLength

// ErrItemKeys means a fire of a job whose items come from data could not
// read the list of item keys in force: its runs fail with it, and are
// not run without their keys.
var ErrItemKeys = errors.New("job: item keys unreadable")

// itemListLead is how long before a fire the leader reads the item
// source, and itemListMargin how long before the fire its list must be
// stored to be in force for it (instances read it as they run the fire).
const (
	itemListLead   = 2 * time.Second
	itemListMargin = 500 * time.Millisecond
	// itemListRetry is how often the source is tried until a list is
	// stored.
	itemListRetry = 250 * time.Millisecond
)

// listItems is the item source's loop (the keys kicker's pass): ahead of
// each fire of the schedule, the leader reads the source and stores a
// changed list. It runs until the runner stops, or the job has no
// schedule to follow (schedule kicks it again when the config changes).
func (r *runner) listItems() {
	lister, ok := r.job.(ItemLister)
	if !ok {
		return
	}
	// Until a list is stored, a pass comes round every itemListRetry
	// rather than ahead of the next fire: the job's first fires need a
	// list, and the job's start comes before its election.
	pending := true
	var kept string // why the last read kept the list, told once
	for !r.isClosed() {
		cfg := r.config()
		sched, _, err := cfg.Schedule()
		if err != nil || cfg.Disabled {
			return
		}
		next := sched.Next(r.s.opts.now())
		if next.IsZero() {
			return
		}
		if !pending && !r.sleepUntil(next.Add(-itemListLead), nil) {
			return
		}
		if err := r.prepareSync(); err != nil {
			r.log.Warn("item source: preparing to lead", "err", err)
		}
		if r.elect.IsLeader() {
			// Led once: a source that failed is tried again ahead of
			// the next fire, not every itemListRetry.
			pending = false
			switch err := r.refreshItemKeys(lister, cfg.ShardingTotalCount, sched.Next); {
			case err == nil:
				kept = ""
			case err.Error() != kept:
				kept = err.Error()
				r.log.Warn("item source: keeping the last list of item keys", "err", err)
				r.s.emit(Event{Kind: EventItemsKept, Job: r.name, Err: err, Detail: kept, At: time.Now()})
			}
		} else if pending {
			pending = !r.itemKeysStored()
		}
		wake := next
		if pending {
			wake = r.s.opts.now().Add(itemListRetry)
		}
		if !r.sleepUntil(wake, nil) {
			return
		}
	}
}

// itemKeysStored reports whether the job's item keys are stored (false
// when the registry cannot say).
func (r *runner) itemKeysStored() bool {
	ctx, cancel := r.coordCtx(r.rc.Session())
	defer cancel()
	ok, _, err := r.rc.Exists(ctx, r.paths.ItemKeys())
	return ok && err == nil
}

// refreshItemKeys reads the item source and stores the list it returns,
// changed, in force from the first fire it can be for (nextFire gives
// the fire after a time). A list is stored over the version read, fenced
// on this instance's leadership. It returns why it kept the last list:
// the source failed, or its list cannot be stored.
func (r *runner) refreshItemKeys(lister ItemLister, total int, nextFire func(time.Time) time.Time) error {
	sess := r.rc.Session()
	ctx, cancel := context.WithTimeout(sess.Ctx(), ItemListTimeout)
	defer cancel()
	keys, err := callLister(ctx, lister)
	if err != nil {
		return fmt.Errorf("reading the item source: %w", err)
	}
	p := r.paths.ItemKeys()
	data, st, err := r.rc.Get(ctx, p)
	stored := err == nil
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		r.log.Warn("item source: reading the stored list", "err", err)
		return nil
	}
	var doc itemkeys.Doc
	if stored {
		if doc, err = itemkeys.Decode(data); err != nil {
			r.reportBadValue(p, st, data, "garbage in the item keys; the leader stores a new list", "err", err)
			doc = itemkeys.Doc{}
		}
	}
	var from time.Time // the first list: in force at once
	if stored {
		from = nextFire(r.s.opts.now().Add(itemListMargin))
	}
	out, ch, err := itemkeys.Assign(doc, keys, total, from)
	if err != nil {
		return err
	}
	if stored && ch.Same() && len(doc.Cur.Keys) == total {
		return nil
	}
	enc, err := itemkeys.Encode(out)
	if err != nil {
		return err
	}
	fence, err := r.elect.Fence()
	if err != nil {
		return nil // no longer the leader: the new one reads the source
	}
	write := regcenter.Op(regcenter.CreateOp{Path: p, Data: enc})
	if stored {
		write = regcenter.SetOp{Path: p, Data: enc, Version: st.Version}
	}
	if err := r.rc.Multi(ctx, fence, write); err != nil {
		r.log.Warn("item source: storing the list", "err", err)
		return nil
	}
	n := out.Cur.Count()
	detail := fmt.Sprintf("%d keys, %d added, %d removed, from %s", n, len(ch.Added), len(ch.Removed), fromText(out.Cur.From))
	r.log.Info("item keys listed", "keys", n, "added", len(ch.Added), "removed", len(ch.Removed), "from", fromText(out.Cur.From))
	r.s.emit(Event{Kind: EventItemsListed, Job: r.name, Units: n, Detail: detail, At: time.Now()})
	return nil
}

func fromText(t time.Time) string {
	if t.IsZero() {
		return "now"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// callLister calls the item source, a panic being its error.
func callLister(ctx context.Context, l ItemLister) (keys []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("item source panicked: %v", p)
		}
	}()
	return l.ListItems(ctx)
}

// readItemKeys reads, for a fire of a job whose items come from data,
// the key of each of f's items in the list in force at its fire.
func (r *runner) readItemKeys(f *fire) error {
	ctx, cancel := r.coordCtx(f.sess)
	defer cancel()
	p := r.paths.ItemKeys()
	data, st, err := r.rc.Get(ctx, p)
	if errors.Is(err, regcenter.ErrNoNode) {
		f.keys = map[int]string{} // no list yet: no item has a key
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrItemKeys, err)
	}
	doc, err := itemkeys.Decode(data)
	if err != nil {
		r.reportBadValue(p, st, data, "garbage in the item keys; the runs that need them fail", "err", err)
		return fmt.Errorf("%w: %w", ErrItemKeys, err)
	}
	f.keys = make(map[int]string, len(f.items))
	for _, it := range f.items {
		if keys := doc.At(f.fireOf(it)); it < len(keys) {
			f.keys[it] = keys[it]
		}
	}
	return nil
}

// failItems completes f's items, which did not start, as failed with err.
func (r *runner) failItems(f *fire, results chan itemResult, n int, err error) {
	r.log.Warn("fire failed before its runs", "fire", f.at, "err", err)
	now := time.Now()
	for _, it := range f.items {
		through := r.book.LatestThrough(f.fireOf(it), it)
		results <- itemResult{Item: it, Fire: f.fireOf(it), Through: through, Kind: bookKind(f.kind), Begin: now, End: now, Err: err}
	}
	r.done.All(f.sess, f.cfg.done, results, n)
}
