// Package backfilling does a job's backfill work in the registry and
// hands items over to its fires. A backfill (internal/backfill) is an
// operator's request to run the job's fires over a past range; the
// runner's driver runs the fires of the items this instance owns, each
// through the fire path. This room reads the request, reads (and makes,
// where missing) the items' progress nodes and groups the items by their
// next fire, tells the job's other servers of the request after a
// reshard, finds when every item is through, and rechecks a fire's items
// under their marks. Its Waiters hand items released here to the backfill
// fires waiting for them.
//
// It owns the waiters and nothing else: the request and the progress are
// the registry's, the progress known here a backfill.Known that the
// completion stage writes too, the reservation of items the caller's (a
// reserve func, the book's). It calls the registry helpers of
// internal/backfill, internal/parallel and the registry, never the runner.
package backfilling

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/internal/backfill"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/regcenter"
)

// Reporter reports a node whose value does not decode (the runner's
// reporter of bad values).
type Reporter func(p string, st regcenter.Stat, data []byte, msg string, args ...any)

// Registry does a job's backfill work in the registry. Its fields are set
// once, before its first use.
type Registry struct {
	RC       regcenter.Center
	Paths    layout.Job
	ServerID string          // this instance's server: TellServers tells the others
	Known    *backfill.Known // the progress as known here: what is read is noted
	Log      *slog.Logger
	Report   Reporter
}

// ReadRequest reads the job's backfill request; false when there is none
// (or it does not decode: reported, and read as none), an error when it
// could not be read.
func (g *Registry) ReadRequest(ctx context.Context) (backfill.Request, bool, error) {
	req, ok, _, err := backfill.ReadRequest(ctx, g.RC, g.Paths, func(p string, st regcenter.Stat, data []byte, err error) {
		g.Report(p, st, data, "garbage in the backfill request; no backfill runs", "err", err)
	})
	if err != nil {
		g.Log.Warn("backfill: reading the request", "err", err)
	}
	return req, ok, err
}

// Next returns, by fire, the items of assigned (this instance's; those
// outside [0, total) or disabled left out) whose next fire of req it is
// (none: every item here is through), and the items kept. Progress not
// known yet is read, and an item's progress node made where missing, for
// its completion to set.
func (g *Registry) Next(ctx context.Context, req backfill.Request, sched backfill.Schedule, assigned []int, disabled map[int]bool, total int) (map[time.Time][]int, []int, error) {
	var mine, unknown []int
	for _, it := range assigned {
		if it < 0 || it >= total || disabled[it] {
			continue
		}
		mine = append(mine, it)
		if _, ok := g.Known.Of(it, req.ID); !ok {
			unknown = append(unknown, it)
		}
	}
	if len(unknown) > 0 {
		errs := make([]error, len(unknown))
		parallel.Each(len(unknown), 32, func(i int) {
			var p backfill.Progress
			if p, errs[i] = backfill.StartProgress(ctx, g.RC, g.Paths, req, unknown[i], g.badProgress(unknown[i])); errs[i] == nil {
				g.Known.Read(unknown[i], p)
			}
		})
		if err := errors.Join(errs...); err != nil {
			return nil, nil, err
		}
	}
	var groups map[time.Time][]int
	for _, it := range mine {
		p, _ := g.Known.Of(it, req.ID)
		if next, ok := backfill.Next(sched, req, p); ok {
			if groups == nil {
				groups = map[time.Time][]int{}
			}
			groups[next] = append(groups[next], it)
		}
	}
	return groups, mine, nil
}

// TellServers sets the backfill flag of the job's other servers (one
// transaction): an instance that joined after the request was made holds
// items of it now. A server gone meanwhile keeps its flag for its return.
func (g *Registry) TellServers(ctx context.Context) {
	if _, err := backfill.TellServers(ctx, g.RC, g.Paths, g.ServerID); err != nil {
		g.Log.Warn("backfill: telling the other servers", "err", err)
	}
}

// badProgress reports an item's progress node that does not decode.
func (g *Registry) badProgress(item int) backfill.BadValue {
	return func(p string, st regcenter.Stat, data []byte, err error) {
		g.Report(p, st, data, "garbage in a backfill progress node; the item starts the range again", "item", item, "err", err)
	}
}

// Through reports whether every item of the job's total (but disabled
// ones) has run req through: read from the items' progress nodes.
func (g *Registry) Through(ctx context.Context, req backfill.Request, sched backfill.Schedule, total int, disabled map[int]bool) bool {
	var items []int
	for it := range total {
		if !disabled[it] {
			items = append(items, it)
		}
	}
	for _, rd := range backfill.ReadProgress(ctx, g.RC, g.Paths, items) {
		if _, more := backfill.Next(sched, req, rd.Progress); rd.Err != nil || !rd.Decoded || more {
			return false
		}
	}
	return true
}

// Recheck reads, once the items of request id's fire at are marked here,
// their progress: an item that ran the fire elsewhere meanwhile (its
// previous owner, before it released the mark the fire waited for) is
// returned in ran, to be settled unrun, its mark deleted by the
// completion; the others in keep. Read under the mark, the progress is the
// last word: a completion writes it before the mark goes. An item whose
// progress cannot be read runs. versions are the progress nodes' versions
// read, by item (-1: no node): the completion writes the progress over
// them, under the mark, so that a write of an earlier fire's, applied late
// (its answer lost), cannot put the progress back.
func (g *Registry) Recheck(ctx context.Context, id string, at time.Time, items []int) (keep, ran []int, versions map[int]int32) {
	reads := backfill.ReadProgress(ctx, g.RC, g.Paths, items)
	versions = make(map[int]int32, len(items))
	keep = items[:0:0]
	for i, it := range items {
		versions[it] = reads[i].Version
		if rd := reads[i]; rd.In(id) {
			g.Known.Read(it, rd.Progress)
			if rd.Progress.Through >= at.UnixMilli() {
				ran = append(ran, it)
				continue
			}
		}
		keep = append(keep, it)
	}
	return keep, ran, versions
}
