package backfill

import (
	"context"
	"errors"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/regcenter"
)

// The request's and the progress's nodes as the instances (package job)
// and the operators' library (internal/admin) read and write them.

// BadValue is told of a node whose data does not decode (nil: nobody).
type BadValue func(p string, st regcenter.Stat, data []byte, err error)

// readers is how many nodes a read of many items' progress reads at once.
const readers = 32

// ReadRequest reads a job's request and its node's version (-1: no
// node). A request that does not decode is told to bad and read as none
// (ok false), with its node's version: a new request is written over it.
func ReadRequest(ctx context.Context, rc regcenter.Center, paths layout.Job, bad BadValue) (req Request, ok bool, version int32, err error) {
	p := paths.Backfill()
	data, st, err := rc.Get(ctx, p)
	if errors.Is(err, regcenter.ErrNoNode) {
		return Request{}, false, -1, nil
	}
	if err != nil {
		return Request{}, false, 0, err
	}
	req, err = DecodeRequest(data)
	if err != nil {
		if bad != nil {
			bad(p, st, data, err)
		}
		return Request{}, false, st.Version, nil
	}
	return req, true, st.Version, nil
}

// Read is an item's progress node as read: its progress (Decoded false
// when there is no node, or its data does not decode), its version (-1:
// no node), or the error of the read.
type Read struct {
	Progress Progress
	Decoded  bool
	Version  int32
	Err      error
}

// In reports whether the progress is request id's.
func (r Read) In(id string) bool { return r.Decoded && r.Progress.ID == id }

// ReadProgress reads the progress nodes of items, several at once.
func ReadProgress(ctx context.Context, rc regcenter.Center, paths layout.Job, items []int) []Read {
	out := make([]Read, len(items))
	parallel.Each(len(items), readers, func(i int) {
		out[i].Version = -1
		data, st, err := rc.Get(ctx, paths.BackfillItem(items[i]))
		switch {
		case errors.Is(err, regcenter.ErrNoNode):
			return
		case err != nil:
			out[i].Err = err
			return
		}
		out[i].Version = st.Version
		out[i].Progress, err = DecodeProgress(data)
		out[i].Decoded = err == nil
	})
	return out
}

// StartProgress reads item's progress in req, making its node (no fire
// run yet) where it is missing, or names another request or garbage (told
// to bad): over the version read, so that a completion written meanwhile
// stands.
func StartProgress(ctx context.Context, rc regcenter.Center, paths layout.Job, req Request, item int, bad BadValue) (Progress, error) {
	p := paths.BackfillItem(item)
	data, st, err := rc.Get(ctx, p)
	fresh := Progress{ID: req.ID}
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
		if _, err := rc.Create(ctx, p, fresh.Encode(), regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
			return Progress{}, err
		}
		return fresh, nil
	case err != nil:
		return Progress{}, err
	}
	got, err := DecodeProgress(data)
	if err != nil {
		if bad != nil {
			bad(p, st, data, err)
		}
	} else if got.ID == req.ID {
		return got, nil
	}
	if _, err := rc.Set(ctx, p, fresh.Encode(), st.Version); err != nil && !errors.Is(err, regcenter.ErrBadVersion) {
		return Progress{}, err
	}
	return fresh, nil
}

// TellServers raises the backfill flag of every server of the job but
// except ("": none), in one transaction (a flag already up stays), and
// returns how many servers the job has.
func TellServers(ctx context.Context, rc regcenter.Center, paths layout.Job, except string) (int, error) {
	ids, err := rc.Children(ctx, paths.Servers())
	if err != nil {
		return 0, err
	}
	return len(ids), regcenter.MultiDropping(ctx, rc, paths.TellBackfillOps(ids, except), func(_ regcenter.Op, err error) bool {
		return errors.Is(err, regcenter.ErrNodeExists)
	})
}
