package reconcile

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Round is one job's repair, a round of the Loop for it: what it reads of
// the job's nodes, and what it asks of the job. It runs on the Loop's
// goroutine; what it asks is done on it too, except Reregister.
type Round struct {
	RC     regcenter.Center
	Paths  layout.Job
	Server string
	// Life is the job's life on this instance: the work written behind
	// (Behind) runs under it, bounded by Timeout, as does the rest under
	// the live session.
	Life    context.Context
	Timeout time.Duration
	// Registered returns the session the job registered under (nil:
	// still starting) and whether it is stopping.
	Registered func() (*regcenter.Session, bool)
	// Behind writes what the job deferred that is due (records written
	// behind, a journal sweep), whatever the session.
	Behind func(context.Context)
	// Reregister registers the job under sess, on a goroutine of the
	// job's: it is registered under another.
	Reregister func(sess *regcenter.Session)
	// Prepared reports the job prepared: in the election, running items.
	Prepared func() bool
	// RestoreStatus restores this server's status node, found missing.
	RestoreStatus func(context.Context, *regcenter.Session)
	// Campaign joins the election again, found without a leader.
	Campaign func(context.Context) error
	// VerifyHolds checks the marks the job holds under sess.
	VerifyHolds func(context.Context, *regcenter.Session)
	// IsLeader reports this instance the job's leader; a leader's round
	// checks the Assignment and repairs the books (RepairBooks).
	IsLeader    func() bool
	Assignment  Assignment
	RepairBooks func(context.Context) error
	// Seen is what the job's last clean check read; a leader's round
	// skips the checks while none of it changed, and keeps what its own
	// checks read. Nil: the checks run every round.
	Seen *Seen
	Log  *slog.Logger
}

// Run repairs the job once.
func (d Round) Run() {
	sess := d.RC.Session()
	if sess.Err() != nil {
		return
	}
	reg, stopping := d.Registered()
	if stopping {
		return
	}
	{
		ctx, cancel := context.WithTimeout(d.Life, d.Timeout)
		d.Behind(ctx)
		cancel()
	}
	if reg == nil {
		return // still starting
	}
	if reg != sess {
		d.Reregister(sess)
		return
	}
	if !d.Prepared() {
		// Not in the election yet and running nothing: its flags watch
		// restores its status, and it costs no request between fires.
		return
	}
	ctx, cancel := context.WithTimeout(sess.Ctx(), d.Timeout)
	defer cancel()
	// One read for the round's backstops and, on the leader, the stats
	// of every node its checks read: those its last clean check kept
	// (Seen), or, with none kept, those of the servers listed now, to
	// keep if this round's check finds the job right.
	key := seenKey(d.Assignment)
	var watched []string
	leading := d.IsLeader()
	if leading {
		var ok bool
		if watched, ok = d.Seen.kept(key); !ok && d.Seen != nil {
			watched = d.listServers(ctx)
		}
	}
	reads := []string{d.Paths.Flag(d.Server, layout.Status), d.Paths.ElectionHost()}
	if watched != nil {
		reads = append(reads, checkedPaths(d.Paths, watched)...)
	}
	nodes, err := d.RC.GetMany(ctx, reads...)
	if err == nil {
		// Our own registration: a status node deleted under us is
		// restored (the flags watch normally does it at once; this is
		// the backstop).
		if !nodes[0].Exists {
			d.RestoreStatus(ctx, sess)
		}
		if !nodes[1].Exists {
			// Nobody leads: campaign again in case a watch was missed.
			if err := d.Campaign(ctx); err != nil {
				d.Log.Warn("reconcile: rejoining election", "err", err)
			}
		}
	}
	d.VerifyHolds(ctx, sess)
	if !d.IsLeader() {
		return
	}
	var stamped []regcenter.NodeData // nil: the check keeps nothing (a leader since the read)
	if leading && err == nil && watched != nil {
		stamped = nodes[2:]
	}
	if _, ok := d.Seen.kept(key); ok && d.Seen.unchanged(stamped) {
		return // nothing the checks read has changed since they found it right
	}
	servers, clean, err := d.Assignment.Check(ctx)
	if err != nil {
		d.Log.Warn("reconcile", "err", err)
	}
	if err := d.RepairBooks(ctx); err != nil {
		clean = false
		if ctx.Err() == nil {
			d.Log.Warn("reconcile: repairing the load table's books", "err", err)
		}
	}
	d.Seen.note(key, watched, stamped, servers.Names(), clean)
}

// listServers lists the job's servers, sorted, for the stats a round
// reads before a check that may keep them (nil: none to read, the list
// failed). A job without a servers node has none.
func (d Round) listServers(ctx context.Context) []string {
	names, err := d.RC.Children(ctx, d.Paths.Servers())
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
		return []string{}
	case err != nil:
		return nil
	}
	slices.Sort(names)
	return names
}
