package job

import (
	"context"
	"errors"
	"time"

	"github.com/shardjob/shardjob/job/internal/itemkeys"
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
// invalid or repeated key, more keys than items, a list over 768 KiB
// stored), keeps the last list in force and raises EventItemsKept, once
// until the reason changes or a read succeeds.
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

// listItems is the item source's loop (the keys kicker's pass;
// itemkeys.Lister): ahead of each fire, the leader reads the source and
// stores a changed list.
func (r *runner) listItems() {
	lister, ok := r.job.(ItemLister)
	if !ok {
		return
	}
	a := r.active() // the lister runs on the leader: it joins the election (Prepare)
	l := &itemkeys.Lister{
		RC: r.rc, Paths: r.paths, Source: lister.ListItems, Timeout: ItemListTimeout, Coord: r.s.opts.reshardTimeout,
		Job: func() itemkeys.Job {
			cfg := r.config()
			sched, _, err := cfg.Schedule()
			if err != nil || cfg.Disabled {
				return itemkeys.Job{}
			}
			return itemkeys.Job{Total: cfg.ShardingTotalCount, Next: sched.Next, OK: true}
		},
		Prepare: r.prepareSync, Leading: a.elect.IsLeader, Fence: a.elect.Fence, Session: r.rc.Session,
		Now: r.s.opts.now, Sleep: func(at time.Time) bool { return a.firer.SleepUntil(at, nil) }, Closed: r.isClosed,
		Log: r.log, ReportBad: r.reportBadValue,
		Listed: func(n int, detail string) {
			r.s.emit(Event{Kind: EventItemsListed, Job: r.name, Units: n, Detail: detail, At: time.Now()})
		},
		Kept: func(err error) {
			r.s.emit(Event{Kind: EventItemsKept, Job: r.name, Err: err, Detail: err.Error(), At: time.Now()})
		},
	}
	l.Run()
}
