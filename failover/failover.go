// Package failover hands the unfinished items of an instance that left —
// crashed, lost its session, or shut down mid-execution — to an idle live
// instance, at once rather than at the next fire.
//
// The job's leader notices a departure (its status node is gone while it
// still holds an assignment), and in one transaction queues every item of
// that instance that had not completed the latest fire under
// leader/failover/items and clears the departed instance's assignment, so
// the same departure is never queued twice. Idle instances watch the queue
// and claim an item by creating the ephemeral execution/{item}/failover
// node: the create succeeds for exactly one of them. The claimer runs the
// item and removes the queue entry and its claim in the transaction that
// marks the item completed. If the claimer dies first, its claim vanishes
// with its session and the item is claimed again.
package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Entry is one queued item.
type Entry struct {
	// Item is the sharding item.
	Item int `json:"-"`
	// Fire is the earliest fire (unix ms) the item has not completed.
	Fire int64 `json:"fire"`
	// From is the server that held the item.
	From string `json:"from"`
	// MayHaveRun is the latest fire (Unix ms) the item's previous owner may
	// have started, wholly or in part, before the item was queued: the
	// fire due when the leader queued a departed instance's items, or the
	// last fire of a run cut short by shutdown. The fires from Fire through
	// it may have run (job.ShardingContext.MayHaveRunThrough); 0 when none
	// did (debts handed over at a leave, entries queued by an older
	// version).
	MayHaveRun int64 `json:"mayHaveRun,omitempty"`
	// Attempts is how many attempts of Fire failed before the item was
	// queued: a retry's wait (job.Config.Retry) cut short by shutdown.
	// The claimer's run of Fire continues the count; 0 when none failed.
	Attempts int `json:"attempts,omitempty"`
	// Version is the entry node's version as Claim read it. A claimer
	// dequeues with it, so that an earlier debt merged into the entry
	// while the item ran (see Enqueue) stays queued.
	Version int32 `json:"-"`
	// Garbage is set by Claim when the entry's data could not be read
	// (not written by shardjob): the claim is still taken, so that the
	// entry is paid and dequeued rather than stuck, and Fire is zero — the
	// claimer decides which fire the debt covers.
	Garbage error `json:"-"`
}

// Queue is the failover queue of one job.
type Queue struct {
	rc    regcenter.Center
	paths layout.Job
}

// NewQueue returns the failover queue of job.
func NewQueue(rc regcenter.Center, job string) *Queue {
	return &Queue{rc: rc, paths: layout.Job(job)}
}

// EnqueueOps returns the ops that queue entries; entries already queued
// must be left out by the caller (a create of an existing entry fails the
// transaction).
func (q *Queue) EnqueueOps(entries []Entry) []regcenter.Op {
	ops := make([]regcenter.Op, 0, len(entries))
	for _, e := range entries {
		data, _ := json.Marshal(e)
		ops = append(ops, regcenter.CreateOp{Path: q.paths.FailoverItem(e.Item), Data: data})
	}
	return ops
}

// Enqueue queues entries (with extra ops in the same transaction). An item
// already queued keeps its entry, moved back to the earlier of the two
// fires, with the later of their MayHaveRun: a queued debt only ever grows. It makes sure the queue's parent
// exists.
func (q *Queue) Enqueue(ctx context.Context, entries []Entry, extra ...regcenter.Op) error {
	if err := q.rc.EnsurePath(ctx, q.paths.FailoverItems()); err != nil {
		return err
	}
	var err error
	for attempt := 0; attempt < 3+2*len(entries); attempt++ {
		var ops []regcenter.Op
		ops, err = q.MergeOps(ctx, entries)
		if err != nil {
			return err
		}
		n := len(ops)
		if n == 0 && len(extra) == 0 {
			return nil
		}
		err = q.rc.Multi(ctx, append(ops, extra...)...)
		var me *regcenter.MultiError
		if err == nil || !errors.As(err, &me) || me.Index >= n ||
			!(errors.Is(me.Err, regcenter.ErrNodeExists) || errors.Is(me.Err, regcenter.ErrNoNode) || errors.Is(me.Err, regcenter.ErrBadVersion)) {
			return err
		}
		// The queue changed between the read and the write: read again.
	}
	return err
}

// MergeOps reads the queued entries of entries' items and returns the ops
// that create the missing ones and move existing ones back to an earlier
// fire. The ops fail (ErrNodeExists, ErrBadVersion) if the queue changes
// between the read and the transaction; read again then.
func (q *Queue) MergeOps(ctx context.Context, entries []Entry) ([]regcenter.Op, error) {
	var ops []regcenter.Op
	for _, e := range entries {
		p := q.paths.FailoverItem(e.Item)
		data, st, err := q.rc.Get(ctx, p)
		if errors.Is(err, regcenter.ErrNoNode) {
			ops = append(ops, q.EnqueueOps([]Entry{e})...)
			continue
		}
		if err != nil {
			return nil, err
		}
		var old Entry
		if json.Unmarshal(data, &old) == nil && old.Fire > 0 {
			if old.Fire <= e.Fire && old.MayHaveRun >= e.MayHaveRun && (old.Fire < e.Fire || old.Attempts >= e.Attempts) {
				continue
			}
			// Merged: the earlier fire, and the later fire that may have
			// run, with the earlier entry's server; the failed attempts
			// are those of the fire kept.
			switch {
			case old.Fire < e.Fire:
				e.Fire, e.From, e.Attempts = old.Fire, old.From, old.Attempts
			case old.Fire == e.Fire:
				e.From, e.Attempts = old.From, max(e.Attempts, old.Attempts)
			}
			e.MayHaveRun = max(e.MayHaveRun, old.MayHaveRun)
		}
		// Garbage, or merged with ours: ours replaces it.
		data, _ = json.Marshal(e)
		ops = append(ops, regcenter.SetOp{Path: p, Data: data, Version: st.Version})
	}
	return ops, nil
}

// Items lists the queued items, sorted.
func (q *Queue) Items(ctx context.Context) ([]int, error) {
	names, err := q.rc.Children(ctx, q.paths.FailoverItems())
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(names))
	for _, n := range names {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ErrClaimed means another instance holds the claim on the item.
var ErrClaimed = errors.New("failover: item claimed by another instance")

// ErrNotQueued means the item is no longer queued.
var ErrNotQueued = errors.New("failover: item not queued")

// Claim takes item for server: it creates the ephemeral claim node, which
// succeeds for one instance only, and returns the queued entry. It fails
// with ErrClaimed or ErrNotQueued.
func (q *Queue) Claim(ctx context.Context, item int, server string) (Entry, error) {
	data, st, err := q.rc.Get(ctx, q.paths.FailoverItem(item))
	if errors.Is(err, regcenter.ErrNoNode) {
		return Entry{}, ErrNotQueued
	}
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil || e.Fire <= 0 {
		if err == nil {
			err = fmt.Errorf("fire %d is not a time", e.Fire)
		}
		e = Entry{Garbage: fmt.Errorf("failover: garbage in %s: %w", q.paths.FailoverItem(item), err)}
	}
	e.Item, e.Version = item, st.Version
	// The claim is created together with a check that the entry is still
	// queued as read, so a claim never outlives the entry it is for.
	err = q.rc.Multi(ctx,
		regcenter.CheckOp{Path: q.paths.FailoverItem(item), Version: st.Version},
		regcenter.CreateOp{Path: q.paths.ItemNode(item, layout.Failover), Data: []byte(server), Mode: regcenter.Ephemeral})
	var me *regcenter.MultiError
	switch {
	case err == nil:
		return e, nil
	case errors.As(err, &me) && me.Index == 0 && errors.Is(me.Err, regcenter.ErrBadVersion):
		return q.Claim(ctx, item, server) // the entry changed: read it again
	case errors.As(err, &me) && me.Index == 0:
		return Entry{}, ErrNotQueued
	case errors.As(err, &me) && errors.Is(me.Err, regcenter.ErrNodeExists):
		return Entry{}, ErrClaimed
	case errors.As(err, &me) && errors.Is(me.Err, regcenter.ErrNoNode):
		// execution/{item} does not exist yet.
		if err := q.rc.EnsurePath(ctx, q.paths.Item(item)); err != nil {
			return Entry{}, err
		}
		return q.Claim(ctx, item, server)
	}
	return Entry{}, err
}

// DoneOps returns the ops that end a claimed item's failover: its queue
// entry, unless it changed since the claim, and its claim are removed.
func (q *Queue) DoneOps(e Entry) []regcenter.Op {
	return []regcenter.Op{
		regcenter.DeleteOp{Path: q.paths.FailoverItem(e.Item), Version: e.Version},
		regcenter.DeleteOp{Path: q.paths.ItemNode(e.Item, layout.Failover), Version: -1},
	}
}

// Release gives a claim up (the item stays queued for another instance).
func (q *Queue) Release(ctx context.Context, item int) error {
	err := q.rc.Delete(ctx, q.paths.ItemNode(item, layout.Failover), -1)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	return err
}
