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
// goroutine in three steps: Begin does what needs no read (the work
// written behind, a registration under another session); its reads are
// made with those of every other job due in the same pass, in as few
// requests as the registry allows (Pass); then it acts on what they read.
// What it asks is done on the Loop's goroutine too, except Reregister.
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
	// VerifyHolds returns the nodes to read to check the marks the job
	// holds under sess, and the check of what was read there.
	VerifyHolds func(*regcenter.Session) ([]string, func([]regcenter.NodeData))
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

	// What Begin and reads found, for finish.
	sess    *regcenter.Session
	holds   int                        // the marks' paths read, after the status and the host
	verify  func([]regcenter.NodeData) // the marks' check
	leading bool                       // a leader when the reads were made
	watched []string                   // the servers whose nodes' stats are read (nil: none)
	key     string                     // the check's settings (seenKey)
}

// Run repairs the job once, on its own.
func (d *Round) Run() {
	if d.Begin() {
		Pass(d.RC, d.Timeout, []*Round{d})
	}
}

// Begin starts the round: under a live session, with the job not
// stopping, it writes what the job deferred that is due, re-registers a
// job registered under another session, and reports whether the job,
// registered under this one and prepared, has its nodes to read (Pass).
func (d *Round) Begin() bool {
	sess := d.RC.Session()
	if sess.Err() != nil {
		return false
	}
	reg, stopping := d.Registered()
	if stopping {
		return false
	}
	{
		ctx, cancel := context.WithTimeout(d.Life, d.Timeout)
		d.Behind(ctx)
		cancel()
	}
	if reg == nil {
		return false // still starting
	}
	if reg != sess {
		d.Reregister(sess)
		return false
	}
	if !d.Prepared() {
		// Not in the election yet and running nothing: its flags watch
		// restores its status, and it costs no request between fires.
		return false
	}
	d.sess = sess
	return true
}

// reads returns the nodes the round reads: its own status node and the
// election host (the backstops of their watches), the marks it holds,
// and on the leader every node its checks read — those its last clean
// check kept the stats of (Seen), or, with none kept, those of the
// servers listed now (a request of its own), so that a clean check keeps
// them.
func (d *Round) reads() []string {
	ps := []string{d.Paths.Flag(d.Server, layout.Status), d.Paths.ElectionHost()}
	held, verify := d.VerifyHolds(d.sess)
	d.holds, d.verify = len(held), verify
	ps = append(ps, held...)
	d.key = seenKey(d.Assignment)
	if d.leading = d.IsLeader(); d.leading {
		var ok bool
		if d.watched, ok = d.Seen.kept(d.key); !ok && d.Seen != nil {
			d.watched = d.listServers()
		}
		if d.watched != nil {
			ps = append(ps, jobPaths(d.Paths, d.watched)...)
		}
	}
	return ps
}

// listServers lists the job's servers, sorted (nil: the list failed). A
// job without a servers node has none.
func (d *Round) listServers() []string {
	ctx, cancel := context.WithTimeout(d.sess.Ctx(), d.Timeout)
	defer cancel()
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

// finish acts on what the pass read under sess of the round's nodes
// (own, reads' order) and of the namespace's (shared, sharedPaths' and
// the load table's stat; nil: not read); read is false when the read
// failed.
func (d *Round) finish(sess *regcenter.Session, own, shared []regcenter.NodeData, read bool) {
	if sess != d.sess {
		return // a new session since Begin: the next round
	}
	ctx, cancel := context.WithTimeout(sess.Ctx(), d.Timeout)
	defer cancel()
	if read {
		// Our own registration: a status node deleted under us is
		// restored (the flags watch normally does it at once; this is
		// the backstop).
		if !own[0].Exists {
			d.RestoreStatus(ctx, sess)
		}
		if !own[1].Exists {
			// Nobody leads: campaign again in case a watch was missed.
			if err := d.Campaign(ctx); err != nil {
				d.Log.Warn("reconcile: rejoining election", "err", err)
			}
		}
		d.verify(own[2 : 2+d.holds])
	}
	if !d.IsLeader() {
		return
	}
	var stamped []regcenter.NodeData // nil: the check keeps nothing (say, a leader since the read)
	if d.leading && read && d.watched != nil && shared != nil {
		stamped = append(slices.Clip(own[2+d.holds:]), shared...)
	}
	if _, ok := d.Seen.kept(d.key); ok && d.Seen.unchanged(stamped) {
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
	d.Seen.note(d.key, d.watched, stamped, servers.Names(), clean)
}

// Pass makes the reads of rounds that Begin started, together — one
// GetMany for as many rounds as passPaths allows, with the namespace's
// nodes the leaders' checks read (the exclusions, and the load table's
// stat without its data) once per GetMany — and then finishes each round
// in order with what was read. Each GetMany has timeout to itself.
func Pass(rc regcenter.Center, timeout time.Duration, rounds []*Round) {
	for len(rounds) > 0 {
		sess := rc.Session()
		paths := slices.Clone(sharedPaths)
		var spans []int // rounds[i]'s reads end at spans[i]
		leaders := false
		n := 0
		for ; n < len(rounds) && (n == 0 || len(paths) < passPaths); n++ {
			paths = append(paths, rounds[n].reads()...)
			spans = append(spans, len(paths))
			leaders = leaders || rounds[n].watched != nil
		}
		nodes, shared, read := passRead(rc, sess, timeout, paths, leaders)
		from := len(sharedPaths)
		for i, r := range rounds[:n] {
			var own []regcenter.NodeData
			if read {
				own = nodes[from:spans[i]]
			}
			r.finish(sess, own, shared, read)
			from = spans[i]
		}
		rounds = rounds[n:]
	}
}

// passPaths is about how many paths a pass reads in one GetMany (one
// round's reads are never split): enough for hundreds of jobs in a few
// requests, few enough to answer well within a timeout.
const passPaths = 4000

// passRead reads paths under sess within timeout and, for leaders, the
// load table's stat: the nodes read, the namespace's nodes (sharedPaths'
// and the table's; nil when the table's stat was not read) and whether
// the read succeeded.
func passRead(rc regcenter.Center, sess *regcenter.Session, timeout time.Duration, paths []string, leaders bool) ([]regcenter.NodeData, []regcenter.NodeData, bool) {
	ctx, cancel := context.WithTimeout(sess.Ctx(), timeout)
	defer cancel()
	nodes, err := rc.GetMany(ctx, paths...)
	if err != nil {
		return nil, nil, false
	}
	if !leaders {
		return nodes, nil, true
	}
	ok, st, err := rc.Exists(ctx, layout.Placement)
	if err != nil {
		return nodes, nil, true
	}
	shared := append(slices.Clone(nodes[:len(sharedPaths)]), regcenter.NodeData{Exists: ok, Stat: st})
	return nodes, shared, true
}
