package reshard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/sharding"
)

// Spec is what a reshard reads of a job's config, made from it at each
// reshard.
type Spec struct {
	// Total is the job's item count.
	Total int
	// Strategy is the sharding strategy's name, the default filled in.
	Strategy string
	// Named is the strategy itself, looked up from Strategy (NamedErr
	// when it could not be): used for a strategy other than
	// sharding.Balanced and sharding.Idlest.
	Named    sharding.Strategy
	NamedErr error
	// Failover: the job queues a departed server's items before the
	// assignment is read (Resharder.QueueDeparted).
	Failover bool
	// Owes is the schedule by which the items a reshard leaves unplaced
	// are owed the fires they miss; nil when they are owed nothing (an
	// unmonitored job, one that skips missed fires, a schedule that does
	// not parse).
	Owes fireplan.Schedule
}

// Turn is the leader's part a reshard takes (leader.Duties): the turn
// that lets one reshard or repair of the books run at a time on this
// instance, the servers the last reshard placed items on, and the channel
// closed at a change of leadership.
type Turn interface {
	TryAcquire() bool
	Acquire(ctx context.Context) error
	Release()
	SetSharded(servers []string)
	Changed() <-chan struct{}
}

// Placer commits a reshard's or a repair's request (placement.Placer).
type Placer interface {
	Place(ctx context.Context, req *placement.Request) error
}

// Counters are the job's counters a reshard moves (its JobStats).
type Counters struct {
	// Reshards counts reshards committed; Errors those the placer
	// refused; Unplaced is the items the last one left unplaced.
	Reshards, Errors, Unplaced *atomic.Int64
}

// Resharder runs a job's reshards on this instance: the leader's
// one-transaction reshard, the wait for one before a fire, and the repair
// of the job's entry in the load table. What it needs of the runner is
// handed to it when it is made; it starts nothing, and keeps one fact of
// its own: whether the books are behind (BooksBehind).
type Resharder struct {
	RC     regcenter.Center
	Paths  layout.Job
	Name   string // the job's name
	Server string // this instance's server id
	Log    *slog.Logger
	Turn   Turn
	Placer Placer
	// Leading reports whether this instance leads the job; Fence is the
	// leader's fence (election.Election.Fence).
	Leading func() bool
	Fence   func() (regcenter.Op, error)
	// Config is the job's config as a reshard reads it, now.
	Config func() Spec
	// QueueDeparted queues the items of servers that left while holding
	// some, for failover, and clears their assignments.
	QueueDeparted func(ctx context.Context, servers Servers) error
	// Unplaced is told how many items a committed reshard left unplaced,
	// when some were.
	Unplaced func(n int)
	// Now is the scheduler's clock, Lead its fire lead.
	Now  func() time.Time
	Lead time.Duration
	// Life ends when the runner stops (RepairWhileLive).
	Life     context.Context
	Counters Counters

	// behind: a departed server's assignment was cleared here
	// (NoteBooksBehind) and no reshard or repair committed since.
	behind atomic.Bool
}

// NoteBooksBehind notes that this instance, leading, cleared a departed
// server's assignment as it queued its items for failover
// (failover.Departures.Cleared): until a reshard or a repair here commits,
// the load table credits that server with them (BooksBehind).
func (x *Resharder) NoteBooksBehind() { x.behind.Store(true) }

// BooksBehind reports whether a departed server's assignment was cleared
// here and no reshard or repair here committed since: the load table may
// still credit that server with the items the clear took away. The job's
// next reshard puts it right; a stop that comes first repairs the books as
// it leaves (job/internal/leaving), and again once its leader's duties
// have ended when one of them cleared a departure meanwhile (job's stop),
// or a job nobody else runs would keep the credit until the namespace
// review.
func (x *Resharder) BooksBehind() bool { return x.behind.Load() }

// Request flags a reshard and asks the leader for it at once (see the
// function Request).
func (x *Resharder) Request(ctx context.Context) error {
	return Request(ctx, x.RC, x.Paths, x.Server)
}

// Await returns once no reshard is due: the leader reshards, the others
// wait on a watch (never a polling loop) until ctx ends.
func (x *Resharder) Await(ctx context.Context) error {
	_, err := x.await(ctx, true)
	return err
}

// AwaitPlaced is Await that never reshards under ctx, on the leader
// either: every instance asks (the leader asks itself, through the watch
// on its flag) and waits; the reshard then runs under the leader's own
// bounds, whole, however soon ctx ends (for a wait shorter than a reshard
// may take: Start's). Once no reshard is due it also wants this server's
// assignment written: a reshard that read the job's servers before this
// one joined (its flag raised by another instance's join, or by an
// earlier reshard's) answers the flag and leaves this server out, to a
// later reshard the leader flags once it sees the join. That later
// reshard is asked for here at once, once, and waited for. A server given
// no assignment even then (disabled, or left out by the placement) is not
// asked for again. answered, when not nil, is told of a reshard that was
// due, answered and left this server out, before it asks for the next: a wait bounded
// by its progress counts it as progress.
func (x *Resharder) AwaitPlaced(ctx context.Context, answered func()) error {
	for asked := false; ; asked = true {
		waited, err := x.await(ctx, false)
		if err != nil {
			return err
		}
		placed, _, err := x.RC.Exists(ctx, x.Paths.Flag(x.Server, layout.Sharding))
		if err != nil || placed || asked {
			return err
		}
		if waited && answered != nil {
			answered()
		}
		if err := x.Request(ctx); err != nil {
			return err
		}
	}
}

// await is Await; here lets the leader reshard under ctx. It reports
// whether a reshard was due when it was called.
func (x *Resharder) await(ctx context.Context, here bool) (waited bool, err error) {
	var changed chan struct{}
	var cancelWatch func()
	defer func() {
		if cancelWatch != nil {
			cancelWatch()
		}
	}()
	for first := true; ; first = false {
		due, _, err := x.RC.Exists(ctx, x.Paths.Necessary())
		if err != nil {
			return waited, err
		}
		if !due {
			return waited, nil
		}
		waited = waited || first
		if here && x.Leading() {
			err := x.Reshard(ctx)
			if err == nil {
				continue
			}
			x.Log.Warn("resharding failed", "err", err)
		}
		if cancelWatch == nil {
			// Only now pay for a watch: steady state needs none.
			changed = make(chan struct{}, 1)
			poke := func(regcenter.Event) {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
			c1 := x.RC.Watch(x.Paths.Necessary(), regcenter.WatchNode, poke)
			c2 := x.RC.Watch(x.Paths.Processing(), regcenter.WatchNode, poke)
			cancelWatch = func() { c1(); c2() }
			if !here || !x.Leading() {
				// Ask the leader to reshard now: it may not fire soon (a
				// rare cron, a trigger here). Writing the flag's data is
				// the request; the leader watches it.
				if _, err := x.RC.Set(ctx, x.Paths.Necessary(), []byte(x.Server), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
					x.Log.Warn("asking the leader to reshard", "err", err)
				}
			}
			continue // re-check now that the watches are armed
		}
		select {
		case <-changed:
		case <-x.Turn.Changed():
		case <-ctx.Done():
			return waited, ctx.Err()
		}
	}
}

// AnswerRequest is the leader's answer to a waiting instance's request:
// it reshards if a reshard is due. Only the leader calls it.
func (x *Resharder) AnswerRequest(ctx context.Context) {
	if due, _, err := x.RC.Exists(ctx, x.Paths.Necessary()); err != nil || !due {
		return
	}
	if err := x.Reshard(ctx); err != nil {
		x.Log.Warn("resharding on request", "err", err)
	}
}

// Reshard is the leader's one-transaction reshard.
func (x *Resharder) Reshard(ctx context.Context) error {
	// One reshard at a time (a fire's and a follower's request can meet);
	// the second finds the flag gone and has nothing to do. Uncontended,
	// the turn is taken at once: the caller has just seen the flag.
	if !x.Turn.TryAcquire() {
		if err := x.Turn.Acquire(ctx); err != nil {
			return err
		}
		// Waited for another reshard: it may have done the work.
		if due, _, err := x.RC.Exists(ctx, x.Paths.Necessary()); err != nil || !due {
			x.Turn.Release()
			return err
		}
	}
	defer x.Turn.Release()
	fence, err := x.Fence()
	if err != nil {
		return err
	}
	if _, err := x.RC.Create(ctx, x.Paths.Processing(), []byte(x.Server), regcenter.Ephemeral); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return fmt.Errorf("flag processing: %w", err)
	}
	servers, err := ReadServers(ctx, x.RC, x.Paths)
	if err != nil {
		x.dropProcessing(ctx)
		return err
	}
	fakes, err := FakeStatuses(ctx, x.RC, x.Paths, servers, x.Log)
	if err != nil {
		x.dropProcessing(ctx)
		return err
	}
	job := x.Config()
	online := servers.Online()
	// Departed instances' items are queued (and their assignments
	// cleared) before the assignment is read, so that the reshard writes
	// over what the queueing left and its entry in the load table says
	// the same: read first, the clears made its commit fail, and nothing
	// told the table until the next reshard.
	if job.Failover {
		if err := x.QueueDeparted(ctx, servers); err != nil {
			x.Log.Warn("queueing a departed instance's items for failover", "err", err)
		}
	}
	req, err := x.placeRequest(ctx, job, servers, online, fence, fakes)
	if err != nil {
		x.dropProcessing(ctx)
		return err
	}
	if err := x.Placer.Place(ctx, req); err != nil {
		x.Counters.Errors.Add(1)
		x.dropProcessing(ctx)
		return err
	}
	x.behind.Store(false)
	x.Counters.Reshards.Add(1)
	x.Counters.Unplaced.Store(int64(len(req.UnplacedOut)))
	eligible := make([]string, 0, len(req.Assign))
	for sv := range req.Assign {
		eligible = append(eligible, sv)
	}
	slices.Sort(eligible)
	x.Turn.SetSharded(eligible)
	if len(req.UnplacedOut) > 0 {
		owed := x.oweUnplaced(ctx, job, req.UnplacedOut)
		x.Log.Warn("items unplaced: no server may take them (caps); they are placed when capacity appears, and the fires they miss are made up once then",
			"unplaced", len(req.UnplacedOut), "items", job.Total, "owed since", owed)
		x.Unplaced(len(req.UnplacedOut))
	}
	x.Log.Info("resharded", "servers", online, "items", job.Total, "strategy", job.Strategy)
	return nil
}

// placeRequest reads what the placer needs of this job (its assignment
// now, its unplaced items) and builds its part of the transaction.
func (x *Resharder) placeRequest(ctx context.Context, job Spec, servers Servers, online []string, fence regcenter.Op, fakes []string) (*placement.Request, error) {
	req := &placement.Request{
		Job: x.Name, Total: job.Total, Strategy: job.Strategy,
		Servers: online, Current: map[string][]int{},
	}
	if req.Strategy != sharding.Balanced && req.Strategy != sharding.Idlest {
		if job.NamedErr != nil {
			return nil, job.NamedErr
		}
		req.Named = job.Named
	}
	read, err := ReadAssignment(ctx, x.RC, x.Paths, servers)
	if err != nil {
		return nil, err
	}
	req.Current, req.Unplaced = read.Current, read.Unplaced
	req.Ops = Ops(x.Paths, servers, read, fence, fakes)
	return req, nil
}

// oweUnplaced records, for each unplaced item, the first fire it misses as
// a debt in its misfire node (OweMisfires): whoever is given the item
// later reads the debt when it inherits the item and makes the missed
// fires up in one run. Every reshard that leaves items unplaced writes the
// debts again, so a leader that died between its reshard and these writes
// loses none. It returns the fire the debts start at (zero: none written).
func (x *Resharder) oweUnplaced(ctx context.Context, job Spec, items []int) time.Time {
	if job.Owes == nil {
		return time.Time{}
	}
	since := FirstMissed(job.Owes, x.Now(), x.Lead)
	if since.IsZero() {
		return time.Time{}
	}
	if err := OweMisfires(ctx, x.RC, x.Paths, items, since); err != nil {
		x.Log.Warn("recording the fires unplaced items miss; the next reshard records them again", "err", err)
	}
	return since
}

// FirstMissed is the first fire of sched that items a reshard at now
// leaves unplaced miss: the fire the reshard comes before (dispatched by
// now, within lead), else the next one; zero when there is none. An
// earlier fire they did run is not run again: a make-up run skips the
// fires the item's record lists.
func FirstMissed(sched fireplan.Schedule, now time.Time, lead time.Duration) time.Time {
	since := fireplan.Due(sched, now, lead)
	if since.IsZero() || since.Before(now.Add(-lead)) {
		since = sched.Next(now)
	}
	return since
}

// Repair makes this job's entry in the namespace's load table what its
// assignment nodes say, after something other than a reshard changed
// them: an instance that left cleared its own (it repairs after its
// leave), the leader cleared a departed one's when it queued its items
// for failover; and at every reconcile pass. When the table already says
// the same, nothing is written. It waits for the turn (one reshard or
// repair at a time here).
//
// Any instance may repair, leader or not: the write is fenced by what it
// read (RepairRequest).
func (x *Resharder) Repair(ctx context.Context) error {
	if err := x.Turn.Acquire(ctx); err != nil {
		return err
	}
	defer x.Turn.Release()
	var err error
	for range repairReads {
		var req *placement.Request
		if req, err = RepairRequest(ctx, x.RC, x.Name); err != nil {
			return err
		}
		if err = x.Placer.Place(ctx, req); !errors.Is(err, regcenter.ErrBadVersion) {
			break
		}
		// The job's nodes moved since they were read (another instance
		// left or resharded it meanwhile): read them again.
	}
	if err != nil {
		return fmt.Errorf("repairing the load table's books: %w", err)
	}
	x.behind.Store(false)
	return nil
}

// repairReads is how often Repair reads the job's nodes, when they move
// under its transaction.
const repairReads = 3

// RepairWhileLive is Repair for the leader's and the reconcile loop's
// passes, which the runner's stop (Life's end) ends: the next leader
// repairs.
func (x *Resharder) RepairWhileLive(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(x.Life, cancel)()
	if err := x.Repair(ctx); err != nil && x.Life.Err() == nil {
		return err
	}
	return nil
}

func (x *Resharder) dropProcessing(ctx context.Context) {
	if err := x.RC.Delete(ctx, x.Paths.Processing(), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		x.Log.Warn("removing processing flag", "err", err)
	}
}
