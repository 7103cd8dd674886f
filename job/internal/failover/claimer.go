package failover

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/regcenter"
)

// Claimer claims queued items for this instance and hands claims back,
// keeping what it learns in its State. What it needs of the runner is
// handed to it when it is made; it starts nothing.
type Claimer struct {
	State  *State
	RC     regcenter.Center
	Paths  layout.Job
	Job    string // the job's name
	Server string // this instance's server id
	Log    *slog.Logger
	// SessionFence is the fence of a session's generation
	// (election.Election.SessionFence): false when it ended.
	SessionFence func(*regcenter.Session) (regcenter.Op, bool)
	// Watch calls gone (on a goroutine of the runner) when the node at p
	// is gone, and returns the watch's cancel (State.WatchGone's watch).
	Watch func(p string, gone func()) (cancel func())
	// Kick has the queue scanned again (the runner's failover kicker).
	Kick func()
	// Now is the scheduler's clock.
	Now func() time.Time
}

// Claims are the items a scan of the queue claimed, for the runs that pay
// their entries.
type Claims struct {
	// ByFire is the items claimed, by their entry's fire (unix ms).
	ByFire map[int64][]int
	// MayHaveRun is, by item, the latest fire its previous owner may have
	// run (nil: none).
	MayHaveRun map[int]time.Time
	// Attempts is, by item, the attempts of its fire that failed on its
	// previous owner (nil: none).
	Attempts map[int]Attempts
	// N is how many items were claimed.
	N int
}

// Attempts are the failed attempts of an entry's fire.
type Attempts struct {
	Fire time.Time
	N    int
}

// Read reads the items queued, marking the queue read (State.SetDirty);
// a failed read is logged and leaves it dirty.
func (c *Claimer) Read(ctx context.Context) ([]int, error) {
	c.State.SetDirty(false)
	items, err := failover.NewQueue(c.RC, c.Job).Items(ctx)
	if err != nil {
		c.State.SetDirty(true)
		c.Log.Warn("reading failover queue", "err", err)
	}
	return items, err
}

// Claim claims those of items (read by Read) this instance may run now:
// below total, not blocked behind a run elsewhere, and not running here
// (running reports it: such an item is claimed once it ends, the queue
// marked dirty meanwhile). An item another instance claimed is watched,
// and the queue re-scanned when that claim goes. An entry whose data is
// garbage is paid as a debt of sched's latest fire, so that it is
// dequeued instead of stuck forever.
func (c *Claimer) Claim(ctx context.Context, items []int, total int, sched fireplan.Schedule, running func(item int) bool) Claims {
	q := failover.NewQueue(c.RC, c.Job)
	out := Claims{ByFire: map[int64][]int{}}
	for _, it := range items {
		here := running(it)
		if it >= total {
			continue
		}
		if c.State.IsBlocked(it) {
			continue // running elsewhere: watched, re-scanned when it ends
		}
		if here {
			// Running here already: claimed once it ends (release kicks
			// the claimer again while the queue is marked dirty).
			c.State.SetDirty(true)
			continue
		}
		e, err := q.Claim(ctx, it, c.Server)
		if err == nil && e.Garbage != nil {
			// Nobody can tell which fire it stood for: pay it as a debt of
			// the latest fire, so it is dequeued instead of stuck forever.
			latest := LatestFire(sched, c.Now())
			c.Log.Error("garbage failover entry; running the item once for the latest fire", "item", it, "fire", latest, "err", e.Garbage)
			e.Fire, e.MayHaveRun = latest.UnixMilli(), latest.UnixMilli()
		}
		switch {
		case err == nil:
			out.N++
			c.State.Claimed(it, e.Version)
			out.ByFire[e.Fire] = append(out.ByFire[e.Fire], it)
			if e.MayHaveRun > 0 {
				if out.MayHaveRun == nil {
					out.MayHaveRun = map[int]time.Time{}
				}
				out.MayHaveRun[it] = time.UnixMilli(e.MayHaveRun)
			}
			if e.Attempts > 0 {
				if out.Attempts == nil {
					out.Attempts = map[int]Attempts{}
				}
				out.Attempts[it] = Attempts{Fire: time.UnixMilli(e.Fire), N: e.Attempts}
			}
		case errors.Is(err, failover.ErrClaimed):
			c.watchGone(c.Paths.ItemNode(it, layout.Failover), -1)
		case errors.Is(err, failover.ErrNotQueued):
		default:
			c.Log.Warn("claiming failover item", "item", it, "err", err)
		}
	}
	return out
}

// GiveBack releases this instance's claims on those of claimed that are
// not in reserved: they began running here meanwhile, and their entries
// stay queued.
func (c *Claimer) GiveBack(ctx context.Context, claimed, reserved []int) {
	for _, it := range claimed {
		if slices.Contains(reserved, it) {
			continue
		}
		if err := failover.NewQueue(c.RC, c.Job).Release(ctx, it); err != nil {
			c.Log.Warn("giving a failover claim back", "item", it, "err", err)
		}
		c.State.Unclaim([]int{it})
	}
}

// HandBack returns the claims on items whose failover run could not start
// because they are running elsewhere (typically on their current owner):
// the claim is deleted, so the queue entry stays for whoever can run the
// item, and this instance does not claim the item again until its running
// mark is gone. Holding the claim while waiting would starve the entry: an
// owner that runs the item back to back re-marks it before a remote waiter
// can, and nobody else may claim it. The deletes are fenced on sess; a
// session whose generation ended holds no claims (they were ephemeral).
func (c *Claimer) HandBack(ctx context.Context, sess *regcenter.Session, items []int) {
	fence, ok := c.SessionFence(sess)
	if !ok {
		return
	}
	for _, it := range items {
		// Held off while the instance running the item is registered: it
		// pays the entry itself when its run ends (see release). Racing it
		// for the running mark each time it is deleted would be lost, over
		// and over, to the instance that re-marks its own item.
		wait := WaitFor(ctx, c.RC, c.Paths, it, c.Server)
		c.State.Block(it)
		if err := HandBack(ctx, c.RC, c.Paths, it, fence); err != nil {
			c.Log.Warn("handing back a failover claim", "item", it, "err", err)
		}
		c.watchGone(wait, it)
	}
}

// watchGone re-scans the queue once the node at p is gone, and unblocks
// for claiming the items (item >= 0) that waited for it.
func (c *Claimer) watchGone(p string, item int) {
	c.State.WatchGone(p, item, c.Watch, c.Kick)
}

// LatestFire is sched's latest fire at or before now (now itself, to the
// millisecond, when sched is nil or has none in the past year).
func LatestFire(sched fireplan.Schedule, now time.Time) time.Time {
	if sched != nil {
		if p := fireplan.Prev(sched, now); !p.IsZero() {
			return p
		}
	}
	return now.Truncate(time.Millisecond)
}

// OnGone calls fn, on a goroutine spawn starts, when the node at p is
// deleted, or is found absent when the watch is armed or re-armed after a
// new session (looked at once per resync, within a context coord makes:
// never a loop). It returns the watch's cancel. It is the watch of
// State.WatchGone, and of any wait for a node's end.
func OnGone(rc regcenter.Center, p string, spawn func(func()) bool, coord func() (context.Context, context.CancelFunc), fn func()) (cancel func()) {
	return rc.Watch(p, regcenter.WatchNode, func(ev regcenter.Event) {
		switch ev.Type {
		case regcenter.EventDeleted:
			spawn(fn)
		case regcenter.EventResync:
			spawn(func() {
				ctx, cancel := coord()
				defer cancel()
				if ok, _, err := rc.Exists(ctx, p); err == nil && !ok {
					fn()
				}
			})
		}
	})
}
