package job

import (
	"context"

	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/firing"
	"github.com/shardjob/shardjob/regcenter"
)

// The fire path's stages are job/internal/firing's: the Firer reserves,
// marks, runs and completes a fire's items, handed to it as a value.

// fire is one fire's run on this instance as it passes from stage to
// stage (job/internal/firing).
type fire = firing.Fire

// itemResult is what a run hands forward to its completion
// (job/internal/completion).
type itemResult = completion.Result

// runContext returns the parent of the runs under sess here: cancelled
// when sess ends, or with active.exec's cause when shutdown's grace period
// ends. There is one per session, made by its first run: a run of its own
// would link to active.exec and unlink again every time.
func (r *runner) runContext(sess *regcenter.Session) context.Context {
	a := r.active()
	return a.runs.Of(sess, a.exec)
}
