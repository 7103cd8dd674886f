package runs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// Ctx is the context a run's job is given: done when the runs' parent
// (the session's: see SessionCtx) is, and once the run has ended (End).
//
// Most jobs never wait on their context's Done channel, so a run does not
// make one up front: a cancelCtx of its own, linked into its parent and
// unlinked at the run's end, was about 6 % of an unmonitored one-item
// fire's CPU. Ctx makes it on first use — Done, AfterFunc, or a context
// derived from it (which asks for Done) — and until then answers Err from
// its parent and from whether the run has ended.
//
// A Ctx is made by NewCtx and embedded by value in what the caller keeps
// per run, which may answer values of its own (see Value) and so saves
// the run an allocation; it must not be copied once in use.
type Ctx struct {
	parent context.Context

	// inner is the cancelCtx made on first use; once set it answers
	// everything.
	inner atomic.Pointer[innerCtx]

	mu sync.Mutex
	// err is the first of the parent's error and the run's end, noted
	// while inner is not made; endedFirst says it was the run's end.
	err        error
	endedFirst bool
}

type innerCtx struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// NewCtx returns the context of a run under parent, to embed by value.
func NewCtx(parent context.Context) Ctx { return Ctx{parent: parent} }

// Deadline is the parent's: a run has no deadline of its own (a timeout
// derives a context from it).
func (c *Ctx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Done returns a channel closed when the parent is done or the run has
// ended, whichever comes first.
func (c *Ctx) Done() <-chan struct{} { return c.made().Done() }

// Err returns nil while the run goes on under a live parent, then the
// parent's error or context.Canceled for the run's end, whichever came
// first, and the same error every time after that.
func (c *Ctx) Err() error {
	if in := c.inner.Load(); in != nil {
		return in.ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := c.inner.Load(); in != nil {
		return in.ctx.Err()
	}
	if c.err == nil {
		c.err = c.parent.Err()
	}
	return c.err
}

// Value is the parent's value for key (or the made context's, which adds
// only what the context package uses to find its cancelCtx). A type that
// embeds Ctx and answers keys of its own asks Value for the others.
func (c *Ctx) Value(key any) any {
	if in := c.inner.Load(); in != nil {
		return in.ctx.Value(key)
	}
	return c.parent.Value(key)
}

// AfterFunc arranges for f to run once c is done; see context.AfterFunc.
// The context package uses it to link a context derived from c.
func (c *Ctx) AfterFunc(f func()) (stop func() bool) {
	return context.AfterFunc(c.made(), f)
}

// made returns the cancelCtx standing for c, making it on first use in
// the state c is in: cancelled already if the run has ended, with the
// parent's error if that came first.
func (c *Ctx) made() context.Context {
	if in := c.inner.Load(); in != nil {
		return in.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := c.inner.Load(); in != nil {
		return in.ctx
	}
	var in innerCtx
	if c.endedFirst {
		// Ended under a live parent: done with context.Canceled, whatever
		// the parent does later.
		in.ctx, in.cancel = context.WithCancelCause(context.WithoutCancel(c.parent))
		in.cancel(nil)
	} else {
		in.ctx, in.cancel = context.WithCancelCause(c.parent) // done already if the parent is
	}
	c.inner.Store(&in)
	return in.ctx
}

// End marks the run's end: c is done from now on.
func (c *Ctx) End() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := c.inner.Load(); in != nil {
		in.cancel(nil)
		return
	}
	if c.err == nil {
		if c.err = c.parent.Err(); c.err == nil {
			c.err, c.endedFirst = context.Canceled, true
		}
	}
}

// Cancel cancels the run with cause (for a later fire that replaces it,
// the scheduler's OverlapReplace): c is done from now on, with cause as
// its cause. A run that has ended is left as it is.
func (c *Ctx) Cancel(cause error) {
	c.made() // a context to cancel, in the state the run is in
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.endedFirst {
		return
	}
	c.inner.Load().cancel(cause)
}

// CancelledWith reports whether c is done with a cause that is target
// (errors.Is): whether Cancel(target) cancelled the run.
func (c *Ctx) CancelledWith(target error) bool {
	in := c.inner.Load()
	return in != nil && errors.Is(context.Cause(in.ctx), target)
}

// SessionCtx is a context made once per session: cancelled when the
// session ends, or with its link's cause when the link ends first. It owns
// its lock, taken only in its method. The zero SessionCtx is ready to use.
type SessionCtx struct {
	mu   sync.Mutex
	sess *regcenter.Session
	ctx  context.Context
}

// Of returns the context for sess, making it (and dropping the previous
// session's, which its session's end unlinks) on first use.
func (c *SessionCtx) Of(sess *regcenter.Session, link context.Context) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == sess && c.ctx != nil {
		return c.ctx
	}
	ctx, cancel := context.WithCancelCause(sess.Ctx())
	unlink := context.AfterFunc(link, func() { cancel(context.Cause(link)) })
	context.AfterFunc(ctx, func() { unlink() }) // the session's end unlinks it
	c.sess, c.ctx = sess, ctx
	return ctx
}
