package firing

import (
	"slices"
	"time"

	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/retry"
	"github.com/shardjob/shardjob/job/internal/tracing"
	"github.com/shardjob/shardjob/regcenter"
)

// Fire is one fire's run on this instance as it passes from stage to
// stage (reserve → mark → start → complete): the session it runs under,
// the job's config, the fire's time and kind, and the items it runs, with
// what the stages learn of them on the way. One goroutine at a time holds
// it; the runs it starts read it, and write nothing to it.
type Fire struct {
	Sess  *regcenter.Session
	Job   *Job
	At    time.Time
	Kind  book.Kind
	Items []int
	// Fires holds the items whose run starts at another fire than At: a
	// make-up run since an earlier debt (see Book.AbsorbDebts, and the
	// narrowing of a make-up run).
	Fires map[int]time.Time
	// Priors are what the items' records said before: their completions
	// add to them.
	Priors map[int]records.Record
	// OnePrior is the prior of a scheduled fire's one item, when it has
	// one (HasOne): a map of one entry per fire costs more than the rest
	// of the lookup.
	OnePrior records.Record
	HasOne   bool
	Params   map[int]string // the items' parameters
	// Keys holds the items' keys in the list in force at their fires,
	// for a job whose items come from data; nil otherwise.
	Keys map[int]string
	// Known holds records of a scheduled fire's items newly held here,
	// read for this fire: the marking checks them.
	Known map[int]records.Record
	// Unrecorded are the items newly held here that had no record when
	// this fire read them, and those whose mark another run held when
	// this fire marked them (Recheck): read again once marked.
	Unrecorded []int
	// MayHaveRun holds, for a failover run's items, the latest fire their
	// previous owner may have started (fireplan.MayHaveRunThrough);
	// shared by the run's fires, read only.
	MayHaveRun map[int]time.Time
	// FailedAttempts holds, for a failover run's items, the attempts of
	// their queue entry's fire that failed on the previous owner: the run
	// continues the count.
	FailedAttempts map[int]assume.Failed
	// ParentErr is why the parents' fires did not all succeed, for a job
	// that runs after them anyway.
	ParentErr error
	Trace     *tracing.Fire // the fire's span (job/internal/tracing); nil: tracing is off
	// Backfill is the backfill request a backfill fire runs in, and
	// BackfillVersions the versions of its items' progress nodes read
	// under their marks.
	Backfill         string
	BackfillVersions map[int]int32
}

// Recheck adds item to the items whose record a scheduled fire reads
// again once it has marked them: the fire found the item's mark held by
// another run — of another instance, or of a session that has ended — and
// marked it only once that mark was gone. That run may have stood for
// this very fire (a make-up run through it, of an instance that owed the
// item's earlier fires), and completed it after this fire read what it
// knows of the record: run again as a plain fire, a completed fire would
// run twice. Other kinds read their records once marked anyway.
func (f *Fire) Recheck(item int) {
	if f.Kind == book.Fire && !slices.Contains(f.Unrecorded, item) {
		f.Unrecorded = append(f.Unrecorded, item)
	}
}

// FireOf is the fire item's run starts at (fireplan.FireOf).
func (f *Fire) FireOf(item int) time.Time { return fireplan.FireOf(f.Fires, f.At, item) }

// Prior is what item's record said before this run (see Priors).
func (f *Fire) Prior(item int) records.Record {
	if f.HasOne && len(f.Items) == 1 && f.Items[0] == item {
		return f.OnePrior
	}
	return f.Priors[item]
}

// FailedBefore is how many attempts of the fire at failed before this
// run, on the owner that handed the item over: 0 but for a failover run
// of that very fire. A hostile count is bounded by the policy's limit.
func (f *Fire) FailedBefore(item int, at time.Time) int {
	fa, ok := f.FailedAttempts[item]
	if !ok || !fa.Fire.Equal(at) || fa.N <= 0 {
		return 0
	}
	return min(fa.N, retry.MaxAttempts)
}

// ClosedResult is the result of an execution of item at fire that never
// started because the runner is stopping: not completed, handed over as
// a run cut short with closed (package job's ErrSchedulerClosed).
func (f *Fire) ClosedResult(item int, fire time.Time, closed error) completion.Result {
	now := time.Now()
	return completion.Result{Item: item, Fire: fire, Kind: f.Kind, Begin: now, End: now, Halted: closed}
}
