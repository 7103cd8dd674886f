package assigned

import (
	"context"
	"slices"
	"time"

	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/regcenter"
)

// Releaser releases the held running marks of the items an assignment
// just read under sess no longer lists (heldmarks.Keeper).
type Releaser interface {
	ReleaseUnassigned(ctx context.Context, sess *regcenter.Session, items []int)
}

// Source is this instance's assignment as a fire gets it: the assumption
// the previous read left (Cache), proved by the fire's own transaction or
// by Prove, or read again (Get), resharding first when one is due; and
// the watches of the sharding node and of the reshard epoch that prove an
// assumption without a request. Its fields are set once, before its first
// use.
type Source struct {
	Reader  *Reader
	Cache   *assume.Cache // the assumption and the watches' state
	Held    Releaser      // the held marks of items no longer assigned
	Timeout time.Duration // Coord's bound, for the log
	// Coord bounds a coordination under sess (the runner's coordCtx: the
	// reshard timeout, the session, the runner's life).
	Coord func(sess *regcenter.Session) (context.Context, context.CancelFunc)
	// Unmonitored reports whether the job is unmonitored (its config now).
	Unmonitored func() bool
	// Relead tells the trigger that whether the assumption is proved by
	// watches changed: the lead a fire needs changed with it.
	Relead func()
	// ArmIdle arms the watch of this server's sharding node, and returns
	// its cancel; the watch answers each event with IdleEvent, and does
	// what the event starts (the runner's: a catch-up, the release of
	// moved marks).
	ArmIdle func() (cancel func())
}

// Forget drops the assumption: the next fire reads the registry.
func (s *Source) Forget() {
	if s.Cache.Forget() {
		s.Relead()
	}
}

// Get returns this instance's items for a fire under sess, resharding
// first when the registry says it is due, releases the held marks of the
// items no longer listed, and remembers what it read for the fires after
// it (see assume.Assignment).
func (s *Source) Get(sess *regcenter.Session) (assume.Assignment, error) {
	ctx, cancel := s.Coord(sess)
	defer cancel()
	// A watch's event from here on may answer a change these reads miss:
	// what they read is then not stored (see assume).
	gen := s.Cache.WatchGen()
	// The epoch is read first: a reshard flagged after this read moves it,
	// and the next fire's check fails.
	epoch, began, err := s.Reader.Epoch(ctx)
	if err != nil {
		return assume.Assignment{}, err
	}
	if err := s.Reader.Reshard.Await(ctx); err != nil {
		if ctx.Err() == nil || sess.Err() != nil {
			return assume.Assignment{}, err
		}
		s.Reader.Log.Warn("resharding did not finish in time; firing with the stored assignment", "timeout", s.Timeout)
		ctx, cancel = s.Coord(sess)
		defer cancel()
		epoch = Unproved // the next fire reads again
	}
	a, err := s.Reader.Read(ctx, sess, epoch)
	if err != nil {
		return assume.Assignment{}, err
	}
	a.Began = began
	s.Held.ReleaseUnassigned(ctx, sess, a.Items)
	s.assume(a, gen)
	return a, nil
}

// assume stores what a fire read, for the fires after it. An epoch that
// could not be proved (Unproved) stores nothing. gen is the watches' event
// count (Cache.WatchGen) before the read began.
//
// An instance that holds no items would otherwise send its proof alone
// every fire only to learn that nothing changed (two of three instances
// of a one-item job, every second). While it holds none it watches its
// sharding node instead: any event, including the watch's first answer
// once armed, drops the assumption, and an assumption read after the
// watch was armed is proved by it (watched), so such a fire sends nothing;
// a read during which an event came is not stored.
// A reshard that gives it items writes that node. The watch goes when the
// instance holds items again.
//
// An unmonitored job writes nothing per fire, so a proof would be its
// only request: it keeps the watch while it holds items, and watches the
// reshard epoch too, which a due reshard moves. Its fires then send
// nothing, the leader's included (the epoch's event makes its next fire
// read, and reshard). What a proof would add is bounded by the job's own
// terms: without running marks a reshard does not wait for the items'
// previous owner anyway, so the watch's delivery delay only joins a window
// the job already accepts (Config.Unmonitored).
func (s *Source) assume(a assume.Assignment, gen uint64) {
	if a.Epoch <= Unproved {
		s.Forget()
		return
	}
	a.Proof = slices.Clip(a.Checks(s.Reader.Paths, s.Reader.Server))
	// Every assumption is watched on the sharding node; one with items is
	// watched on the reshard epoch too, so that a fire of held items (or
	// of an unmonitored job) needs no proof.
	watchEpoch := len(a.Items) > 0 || s.Unmonitored()
	cancels, relead := s.Cache.Assume(a, gen, watchEpoch, s.ArmIdle, s.watchEpoch)
	for _, cancel := range cancels {
		cancel()
	}
	if relead {
		s.Relead()
	}
}

// IdleEvent answers an event ev of the sharding node's watch (ArmIdle):
// the assumption is dropped. It reports whether the event may owe the
// items it gave a fire this instance let pass idle: the node was created
// or written after such a pass.
func (s *Source) IdleEvent(ev regcenter.Event) (catchUp bool) {
	relead, passed := s.Cache.IdleEvent()
	if relead {
		s.Relead()
	}
	return passed && (ev.Type == regcenter.EventCreated || ev.Type == regcenter.EventDataChanged)
}

// watchEpoch arms the watch of the reshard epoch (see assume), and returns
// its cancel.
func (s *Source) watchEpoch() (cancel func()) {
	return s.Reader.RC.Watch(s.Reader.Paths.ShardingEpoch(), regcenter.WatchNode, func(regcenter.Event) {
		if s.Cache.EpochEvent() {
			s.Relead()
		}
	})
}

// Prove sends an assumption's checks alone, for a fire under sess that
// marks nothing (no items, or every item still busy with an earlier run):
// a fire must prove its assumption, or an instance whose items stay busy
// would never learn that a reshard moved them. It reports whether the
// assumption still holds, and drops it when not.
func (s *Source) Prove(sess *regcenter.Session, checks []regcenter.Op) (bool, error) {
	ctx, cancel := s.Coord(sess)
	defer cancel()
	ok, err := s.Reader.Prove(ctx, checks)
	if err == nil && !ok {
		s.Forget()
	}
	return ok, err
}

// NoteEpochFlag is the leader's answer to a reshard flag created without
// moving the epoch (Reader.MoveEpochForFlag), under the session of now.
func (s *Source) NoteEpochFlag() {
	ctx, cancel := s.Coord(s.Reader.RC.Session())
	defer cancel()
	s.Reader.MoveEpochForFlag(ctx)
}
