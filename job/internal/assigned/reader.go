package assigned

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/regcenter"
)

// Unproved is the epoch of an assignment read without proof that no
// reshard was due: it is not stored as an assumption, and the next fire
// reads again.
const Unproved = -2

// Resharder is the leader's reshard as a reader waits for it.
type Resharder interface {
	// Request asks the leader to reshard.
	Request(ctx context.Context) error
	// Await waits for a due reshard to be done.
	Await(ctx context.Context) error
}

// Reader reads one server's assignment of one job.
type Reader struct {
	RC      regcenter.Center
	Paths   layout.Job
	Server  string
	Reshard Resharder
	Log     *slog.Logger
	// Quote shortens a garbage value for the log.
	Quote func(string) string
}

// Epoch returns the reshard epoch's version: read before the
// assignment, so that a reshard flagged after it moves it and the next
// fire's check fails. began is the epoch node's creation: when the job's
// tree was made (assume.Assignment.Began).
func (rd *Reader) Epoch(ctx context.Context) (version int32, began time.Time, err error) {
	_, st, err := rd.RC.Exists(ctx, rd.Paths.ShardingEpoch())
	return st.Version, st.Ctime, err
}

// Read reads the server's sharding node under sess, its reshard epoch
// epoch (Unproved: not proved). No node is an assignment of no items.
// Garbage, which no leader writes, has the reader ask for a reshard, wait
// for it and read once more; the assignment is then Unproved.
func (rd *Reader) Read(ctx context.Context, sess *regcenter.Session, epoch int32) (assume.Assignment, error) {
	p := rd.Paths.Flag(rd.Server, layout.Sharding)
	for attempt := 0; ; attempt++ {
		data, st, err := rd.RC.Get(ctx, p)
		if errors.Is(err, regcenter.ErrNoNode) {
			return assume.Assignment{Sess: sess, Epoch: epoch, Set: true}, nil
		}
		if err != nil {
			return assume.Assignment{}, err
		}
		items, err := layout.ParseItems(string(data))
		if err == nil {
			return assume.Assignment{Sess: sess, Items: items, Shard: st.Version, ShardZxid: st.Czxid, ShardSeen: true, Epoch: epoch, Set: true, Written: st.Mtime}, nil
		}
		if attempt > 0 {
			return assume.Assignment{}, fmt.Errorf("garbage in %s after a reshard: %w", p, err)
		}
		// Not written by a leader: ask for a reshard now and wait for it,
		// so that this fire runs with a real assignment.
		rd.Log.Error("garbage in this instance's assignment; asking the leader to reshard", "node", p, "data", rd.Quote(string(data)), "err", err)
		if err := rd.Reshard.Request(ctx); err != nil {
			return assume.Assignment{}, err
		}
		if err := rd.Reshard.Await(ctx); err != nil {
			return assume.Assignment{}, err
		}
		epoch = Unproved // moved by the request; read again next fire
	}
}

// Prove sends an assumption's checks alone and reports whether the
// assumption still holds: false when a check failed (a reshard moved
// it), an error when the transaction could not be sent.
func (rd *Reader) Prove(ctx context.Context, checks []regcenter.Op) (bool, error) {
	err := rd.RC.Multi(ctx, checks...)
	var me *regcenter.MultiError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &me):
		return false, nil
	default:
		return false, err
	}
}

// MoveEpochForFlag is the leader's answer to a reshard flag created
// without moving the epoch (by hand, or by an older version): it moves
// the epoch, so that instances firing on their assumption read again. A
// flag already answered (the epoch moved with it, or since) or gone
// changes nothing.
func (rd *Reader) MoveEpochForFlag(ctx context.Context) {
	due, flag, err := rd.RC.Exists(ctx, rd.Paths.Necessary())
	if err != nil || !due {
		return
	}
	_, epoch, err := rd.RC.Exists(ctx, rd.Paths.ShardingEpoch())
	if err != nil || epoch.Mzxid >= flag.Czxid {
		return // moved with the flag, or since
	}
	if _, err := rd.RC.Set(ctx, rd.Paths.ShardingEpoch(), nil, -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) && ctx.Err() == nil {
		rd.Log.Warn("moving the reshard epoch for a flag set by hand", "err", err)
	}
}
