package job

import (
	"context"

	"github.com/shardjob/shardjob/election"
	"github.com/shardjob/shardjob/job/internal/assigned"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/backfilling"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/execute"
	claims "github.com/shardjob/shardjob/job/internal/failover"
	"github.com/shardjob/shardjob/job/internal/firing"
	"github.com/shardjob/shardjob/job/internal/heldmarks"
	"github.com/shardjob/shardjob/job/internal/inherit"
	"github.com/shardjob/shardjob/job/internal/leader"
	"github.com/shardjob/shardjob/job/internal/makeup"
	"github.com/shardjob/shardjob/job/internal/marks"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/job/internal/runs"
)

// active is what a job uses only once it works: once it prepares (joins
// its election), fires, leads, claims failover items, backfills, or
// stops. An idle job — registered, its next fire beyond prepareAhead,
// failover off — has none of it: its runner holds what its registration,
// its watches, its schedule and its preparation need, and a job of ten
// thousand on an instance costs half the heap it would with every part
// made up front. The runner makes it at its first use (runner.active) and
// keeps it to the end; stop makes it too, so that a stop ends every part
// the same way whether the job ever worked or not.
//
// Its parts are made together, by makeActive, wired to each other as the
// runner's were; each owns its state and lock as before.
type active struct {
	elect *election.Election

	// The completion stage of the fires (job/internal/completion).
	done *completion.Completer
	// What the fire path's stages share (job/internal/firing).
	firer *firing.Firer
	// What its runs share in the execute stage (job/internal/execute).
	run execute.Job
	// This instance's assignment (job/internal/assigned; assignment.go),
	// and the assignment the next fire may assume.
	assigned *assigned.Source
	cache    assume.Cache

	inherit     assume.Inherited  // gaps gained in a reshard that may have run (inherit.go)
	inheritance *inherit.Reader   // reads what a fire inherits with items gained (inherit.go)
	holds       assume.Holds      // the running marks kept across fires
	held        *heldmarks.Keeper // releases those marks (hold.go)
	marker      *marks.Marker     // the running marks of runs (job/internal/firing's Mark)
	ended       *marks.Ended      // the marks and claims an ended session generation left (mark.go)
	reader      *records.Reader   // the completed records read from the registry (completion.go)
	debts       *makeup.Debts     // the make-up runs' registry work (firing's RunOwed)
	fo          *claims.State     // the failover queue as seen here (job/internal/failover)

	// The backfill's mechanisms (job/internal/backfilling; backfill.go).
	bfReg  *backfilling.Registry // its registry work
	bfWait backfilling.Waiters   // its fires waiting for items held here

	// The duties' mechanisms, each a room's (wireDuties, leader.go).
	lead     *leader.Duties     // the leader's duties (job/internal/leader)
	office   *leader.Office     // the leader's duties as they run
	reshard  *reshard.Resharder // reshards, the wait for one, the books' repair
	departed *claims.Departures // the leader's queueing of departed servers' items
	claimer  *claims.Claimer    // claims from the failover queue, hands claims back

	// The runs' contexts, which stop cancels (see lifetimes).
	exec       context.Context // cancelled when shutdown's grace period ends
	cancelExec context.CancelCauseFunc
	// record is cancelled when stop has waited its last for background
	// work: completions (including the hand-over of items cut short) are
	// written until then.
	record       context.Context
	cancelRecord context.CancelFunc
	// runs, with its own lock, is the parent of the runs under a session
	// (runContext).
	runs runs.SessionCtx
}

// active returns the job's active parts, made by the first call.
func (r *runner) active() *active { return r.act.Get(r.makeActive) }

// activeIfMade returns the job's active parts, or nil when nothing has
// made them yet: for what has nothing to do in a job that never worked
// (a leader's question, records deferred, marks held).
func (r *runner) activeIfMade() *active { return r.act.IfMade() }

// makeActive makes the job's active parts, wired to each other and to the
// runner. It only makes them: nothing starts, and nothing is sent.
func (r *runner) makeActive() *active {
	s := r.s
	a := &active{fo: claims.NewState(), lead: leader.NewDuties()}
	a.exec, a.cancelExec = context.WithCancelCause(context.Background())
	a.record, a.cancelRecord = context.WithCancel(context.Background())
	a.run = execute.Job{Name: r.name, Log: r.log, Life: r.ctx.life, Retries: &r.counters.retries, Registry: r.rc, Paths: r.paths}
	a.elect = election.New(s.rc, r.paths.ElectionLatch(), r.paths.ElectionHost(), s.opts.serverID, election.Callbacks{
		OnElected: r.onElected,
		OnRevoked: r.onRevoked,
	}, r.log)
	r.wireDuties(a) // leader.go
	a.marker = r.newMarker(a)
	a.ended = &marks.Ended{Center: r.rc, Paths: r.paths, Log: r.log, Fence: a.elect.SessionFence,
		Claims: func() bool { return r.config().Failover }}
	a.reader = r.newReader()
	a.inheritance = r.newInheritance(a)
	a.debts = r.newDebts(a)
	a.held = r.newKeeper(a)
	a.bfReg = r.newBackfilling()
	a.done = r.newCompleter(a)
	a.firer = r.newFirer(a)
	a.held.Done = a.done
	a.assigned = r.newSource(a)
	return a
}

// leading reports whether this instance leads the job: never before it
// joined the election, which makes the active parts.
func (r *runner) leading() bool {
	a := r.activeIfMade()
	return a != nil && a.elect.IsLeader()
}

// campaign joins the job's election (election.Election.Campaign).
func (r *runner) campaign(ctx context.Context) error { return r.active().elect.Campaign(ctx) }
