package job

import (
	"slices"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/inherit"
	"github.com/shardjob/shardjob/regcenter"
)

// What a fire inherits with the items this instance gained since its
// previous fire (job/internal/inherit reads it), and what a make-up run
// may repeat (ShardingContext.MayHaveRunThrough). The registry knows only
// what the item's record lists; an owner that went away may have started
// fires after it, and their marks went with its session. So a run that
// takes over from such an owner is told the fires it stands for up to the
// latest that owner may have started:
//
//   - a failover run: up to the fire due when the leader queued the
//     departed instance's items, or the last fire of a run cut short by
//     shutdown (failover.Entry.MayHaveRun);
//   - a make-up of a gap an instance finds in an item it gained in a
//     reshard (failover off, a crashed owner): up to the fire before the
//     one that found it (assume.Inherited, job/internal/assume).
//
// Every other run stands for fires nobody ran: a make-up of fires missed
// here, or handed over at a leave, which flushed its records first.

// newInheritance returns the runner's reader of inherited items.
func (r *runner) newInheritance(a *active) *inherit.Reader {
	return &inherit.Reader{RC: r.rc, Paths: r.paths, Records: a.reader, Known: r.records, Owed: r.owed,
		Gaps: &a.inherit, Log: r.log, Report: r.reportBadValue}
}

// inheritedGaps returns, for the items of this fire that this instance did
// not hold without a break since its previous fire (see
// assume.Assignment.HeldSince), the earliest fire before at that the item
// has not completed, where there is one (inherit.Reader.Read). It reads
// the registry only for items not held throughout, so only after a
// reshard or a new session.
//
// fresh lists the items newly held, gaps or not.
func (r *runner) inheritedGaps(sess *regcenter.Session, at time.Time, a assume.Assignment) (gaps map[int]time.Time, fresh []int) {
	cfg := r.config()
	act := r.active()
	prev := act.cache.SwapHeld(a)
	changed := !slices.Equal(a.Items, prev.Items)
	if changed || !a.SameVersion(prev) { // the steady state holds what it held
		held := a.HeldSince(prev)
		for _, it := range a.Items {
			if !held[it] && it >= 0 && it < cfg.ShardingTotalCount {
				fresh = append(fresh, it)
			}
		}
		r.records.Forget(fresh)
	}
	if changed {
		r.s.emit(Event{Kind: EventResharded, Job: r.name, Units: len(a.Items), Detail: layout.FormatItems(a.Items)})
	}
	if len(fresh) == 0 || cfg.Unmonitored {
		return nil, fresh // steady state: nothing newly held
	}
	ctx, cancel := r.coordCtx(sess)
	defer cancel()
	j := inherit.Job{Schedule: cfg.book.Schedule, SkipsMissed: cfg.book.SkipsMissed, Retries: cfg.fireJob().Retry.Attempts > 0,
		Since: inherit.GainedSince(cfg.book.Schedule, at, r.gain(a))}
	return act.inheritance.Read(ctx, j, at, fresh), fresh
}

// gain is what inherit.GainedSince takes of the reshard that gave a its
// items: the registry's times moved onto the fire clock by the fire
// clock's difference from the host's and the host's, as last measured
// (instance.Node.MeasureClock), from the registry's (none measured: the
// two agree). Only a job's age is told by the registry's clock alone.
func (r *runner) gain(a assume.Assignment) inherit.Gain {
	if a.Written.IsZero() {
		return inherit.Gain{}
	}
	shift := r.s.opts.now().Sub(r.s.hostClock())
	if off, ok := r.s.inst.ClockOffset(); ok {
		shift += off
	}
	g := inherit.Gain{Written: a.Written.Add(shift)}
	if at := r.scheduled.Load(); at != 0 {
		g.Scheduled = time.Unix(0, at)
	}
	if !a.Began.IsZero() {
		g.Began = a.Began.Add(shift)
		g.Young = a.Written.Sub(a.Began) <= inherit.NewJob
	}
	return g
}

// ranBefore sorts the items newly held for the fire at (fresh, see
// inheritedGaps) by what their records, just read, say of that fire
// (records.Cache.RanBefore).
func (r *runner) ranBefore(cfg *spec, at time.Time, fresh []int) (ran map[int]bool, known map[int]record, unrecorded []int) {
	if cfg.Unmonitored || cfg.book.Schedule == nil {
		return nil, nil, nil
	}
	return r.records.RanBefore(cfg.book.Schedule, at, fresh)
}
