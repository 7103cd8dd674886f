package journal

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
)

// Sweep folds every journal but j that has not been written for age into
// the records that name it, and deletes it: the journal of a process that
// crashed. At most once per every (SweepDue). schedule returns the
// schedule of a job this process runs (false: it runs no job of that name,
// or the job's schedule did not compile). Entries of jobs it does not run
// are folded by an instance that runs them: a journal is deleted only when
// every job it names was folded here.
func (j *Journal) Sweep(ctx context.Context, every, age time.Duration, schedule func(job string) (fireplan.Schedule, bool)) {
	if !j.SweepDue(every) {
		return
	}
	ids, err := List(ctx, j.rc)
	if err != nil {
		j.log.Debug("listing completion journals", "err", err)
		return
	}
	for _, id := range ids {
		if id == j.ID() {
			continue
		}
		if err := j.foldOrphan(ctx, id, age, schedule); err != nil {
			j.log.Warn("folding a completion journal left by a process that is gone", "journal", id, "err", err)
		}
	}
}

// foldOrphan folds journal id into the records of the jobs schedule knows
// that name it, and deletes it, if it has not been written for age (see
// Sweep).
func (j *Journal) foldOrphan(ctx context.Context, id string, age time.Duration, schedule func(job string) (fireplan.Schedule, bool)) error {
	o, ok, err := ReadOrphan(ctx, j.rc, id, age)
	if err != nil || !ok {
		return err
	}
	all := true
	for name := range o.Doc.Jobs {
		sched, ok := schedule(name)
		if !ok {
			all = false
			continue
		}
		paths := layout.Job(name)
		for it, ran := range o.Doc.Items(name) {
			if err := Fold(ctx, j.rc, sched, paths.ItemNode(it, layout.Completed), id, it, ran); err != nil {
				return err
			}
		}
	}
	if !all {
		return nil
	}
	return DeleteOrphan(ctx, j.rc, o)
}
