package job

import (
	"context"
	"encoding/json"

	"github.com/shardjob/shardjob/job/internal/runs"
	"github.com/shardjob/shardjob/regcenter"
)

// runCtx is the context a run's job is given: the run's runs.Ctx (done
// when the runs' parent, see runner.runContext, is, and once the run has
// returned), with what the run keeps beside it to save an allocation.
type runCtx struct {
	runs.Ctx

	// own is the run's ownership (see owner).
	own ownership

	// out holds the run's output (see RecordOutput).
	out runs.Output
}

func newRunCtx(parent context.Context) *runCtx { return &runCtx{Ctx: runs.NewCtx(parent)} }

// Value is the run's output slot for outputKey, else what the run's
// runs.Ctx answers for key.
func (c *runCtx) Value(key any) any {
	if key == (outputKey{}) {
		return &c.out
	}
	return c.Ctx.Value(key)
}

// owner returns the ownership of the run under sess: c's own.
func (c *runCtx) owner(sess *regcenter.Session) *ownership {
	c.own = ownership{sess: sess, ctx: c}
	return &c.own
}

// Replace cancels the run for a later fire that replaces it
// (OverlapReplace): its context is done from now on, with ErrReplaced as
// its cause. A run that has ended is left as it is.
func (c *runCtx) Replace() { c.Cancel(ErrReplaced) }

// Replaced reports whether the run was cancelled by replace (see
// execute.Ctx).
func (c *runCtx) Replaced() bool { return c.CancelledWith(ErrReplaced) }

// TakeOutput closes the run's output slot and returns what it recorded.
func (c *runCtx) TakeOutput() json.RawMessage { return c.out.Take() }
