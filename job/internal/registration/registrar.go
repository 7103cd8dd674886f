package registration

import (
	"context"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/regcenter"
)

// Registrar registers a job and starts it, and registers it again after
// a new session: the order of the steps, and which are tried again.
// What the steps do beyond the registration's nodes is package job's (the
// job's config node, its book, its election, its events), given as funcs
// at construction; none is called under a lock of this package.
type Registrar struct {
	Node *Node
	// Session is the registry's session of now: a lost one is replaced.
	Session func() *regcenter.Session
	// Bound is how long a step failing on a lost connection or session
	// is tried again (Retry) at Join.
	Bound func() time.Duration
	// LoadConfig makes the config node and the local config agree;
	// RestoreConfig writes the config node back when it is gone.
	LoadConfig, RestoreConfig func(ctx context.Context) error
	// Adopt makes the local config agree with the config node's document
	// stored, read in bulk (JoinMany), as LoadConfig does with the node it
	// reads: it returns the document to write over the node (the config
	// says Overwrite), or nil.
	Adopt func(ctx context.Context, stored []byte) (write []byte, err error)
	// Failover reports whether the job's config has failover on.
	Failover func() bool
	// Recover notes the runs owed for previous, the items a previous life
	// of this server id held (see Debts); its error is logged, not
	// returned.
	Recover func(ctx context.Context, previous []int) error
	// Necessary flags a reshard; Campaign joins the election if this
	// instance takes part in it.
	Necessary func(ctx context.Context)
	Campaign  func(ctx context.Context) error
	// Sweep runs once the instance has joined the election under sess and
	// before the job is registered under it (no run of sess's generation
	// has started): it removes what an ended generation of the same
	// session left (the job's marks.Ended).
	Sweep func(ctx context.Context, sess *regcenter.Session)
	// Registered tells the job it is registered under sess; created says
	// that its tree was just made (Start).
	Registered func(sess *regcenter.Session, created bool)
	// Create makes a new job's tree in one transaction, this instance
	// registered in it, and reports whether it made it.
	Create func(ctx context.Context) (bool, error)
	// Arm arms the job's watches and reports whether the job prepares at
	// once, both by its config of now.
	Arm func(ctx context.Context) (prepares bool)
	// Prepare makes this instance ready to run the job's items; Schedule
	// schedules the job.
	Prepare  func(ctx context.Context) error
	Schedule func()
}

// Start registers the job under the session of now and starts it
// (Started): a new job's tree in one transaction (Create), tried again
// within Bound; a job that exists already node by node (Join).
func (g *Registrar) Start(ctx context.Context) error {
	var (
		sess    *regcenter.Session
		created bool
	)
	err := Retry(ctx, g.Node.Log, g.Bound(), "registering the job", func() (err error) {
		sess = g.Session()
		created, err = g.Create(ctx)
		return err
	})
	if err != nil {
		return err
	}
	return g.Started(ctx, sess, created)
}

// Started finishes Start. created says that the job's tree was just made
// under sess, this instance registered in it: what is left is one round
// trip per watch. Otherwise the job exists already and is registered node
// by node (Join). Then the watches are armed (Arm), the job prepared if it
// prepares at once, tried again within Bound, and scheduled.
func (g *Registrar) Started(ctx context.Context, sess *regcenter.Session, created bool) error {
	if created {
		g.Registered(sess, true)
	} else if err := g.Join(ctx); err != nil {
		return err
	}
	return g.schedule(ctx)
}

// StartJoined finishes the start of a job joined in a batch (JoinMany), as
// Started finishes one joined node by node: what the transaction left to
// do (the previous life's debts, unless this server id was new to the
// job; the election), then the watches, the preparation and the schedule.
// An election that lost the registry is tried again as Join tries it,
// with the whole registration, which finds the batch's nodes in place.
func (g *Registrar) StartJoined(ctx context.Context, j *Joined) error {
	if !j.Fresh {
		if err := g.Recover(ctx, j.Previous); err != nil {
			g.Node.Log.Warn("recovering the previous run's items", "err", err)
		}
	}
	if err := g.Campaign(ctx); err != nil {
		if !LostConnection(err) {
			return err
		}
		if err := g.Join(ctx); err != nil {
			return err
		}
	} else {
		g.Registered(j.Session, false)
	}
	return g.schedule(ctx)
}

// schedule ends a start once the job is registered: its watches armed
// (Arm), the job prepared if it prepares at once, tried again within
// Bound, and scheduled.
func (g *Registrar) schedule(ctx context.Context) error {
	if g.Arm(ctx) {
		if err := Retry(ctx, g.Node.Log, g.Bound(), "preparing the job", func() error { return g.Prepare(ctx) }); err != nil {
			return err
		}
	}
	g.Schedule()
	return nil
}

// Join registers the job node by node under the session of now, tried
// again within Bound: the config loaded, then a server id new to the job
// joined in one transaction (Node.JoinFresh), or else the shutdown flag
// cleared and the nodes made one by one (Register).
func (g *Registrar) Join(ctx context.Context) error {
	return Retry(ctx, g.Node.Log, g.Bound(), "registering the job", func() error {
		if err := g.LoadConfig(ctx); err != nil {
			return err
		}
		// Under the session of now: a lost one is replaced.
		sess := g.Session()
		joined, err := g.Node.JoinFresh(ctx)
		if err != nil || joined {
			if err == nil {
				err = g.finish(ctx, sess, true)
			}
			return err
		}
		if err := g.Node.ClearShutdown(ctx); err != nil {
			return err
		}
		return g.Register(ctx, sess)
	})
}

// Register creates this instance's nodes under sess and, once the
// instance takes part in it, joins the election.
func (g *Registrar) Register(ctx context.Context, sess *regcenter.Session) error {
	if err := g.Node.CreateServer(ctx); err != nil {
		return err
	}
	if err := g.Node.CreateStatus(ctx, sess); err != nil {
		return err
	}
	return g.finish(ctx, sess, false)
}

// finish finishes a registration whose server node and status exist
// under sess: the job's tree, the previous life's items (fresh: none),
// the reshard flag, the election.
func (g *Registrar) finish(ctx context.Context, sess *regcenter.Session, fresh bool) error {
	if err := g.Node.EnsureTree(ctx, g.Failover()); err != nil {
		return fmt.Errorf("job %q: register: %w", g.Node.Job, err)
	}
	if !fresh {
		previous, err := g.Node.PreviousItems(ctx)
		if err == nil {
			err = g.Recover(ctx, previous)
		}
		if err != nil {
			g.Node.Log.Warn("recovering the previous run's items", "err", err)
		}
	}
	g.Necessary(ctx)
	if err := g.Campaign(ctx); err != nil {
		return err
	}
	if g.Sweep != nil {
		g.Sweep(ctx, sess)
	}
	g.Registered(sess, false)
	return nil
}

// Reregister runs after a new session (Node.Reregister): the config node
// restored if the registry lost it, and the job registered again. It
// reports whether that succeeded.
func (g *Registrar) Reregister(sess *regcenter.Session) bool {
	return g.Node.Reregister(sess, func(ctx context.Context) error {
		if err := g.RestoreConfig(ctx); err != nil {
			return err
		}
		return g.Register(ctx, sess)
	})
}

// Debts returns what a previous life of this server id owes here: of
// items, those it held (PreviousItems), the ones that did not complete
// the schedule's latest fire before now, as Owed finds them. A schedule
// is read only when there are such items; none is owed before the
// schedule's first fire.
func Debts(ctx context.Context, items []int, total int, schedule func() (fireplan.Schedule, error), now func() time.Time, completed func(context.Context, int) (time.Time, error)) ([]Debt, error) {
	if len(items) == 0 {
		return nil, nil
	}
	sched, err := schedule()
	if err != nil {
		return nil, err
	}
	latest := fireplan.Prev(sched, now())
	if latest.IsZero() {
		return nil, nil
	}
	return Owed(ctx, items, total, sched, latest, completed)
}
