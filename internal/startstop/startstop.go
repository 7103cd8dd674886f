// Package startstop is the one shape of the project's background
// goroutines. A Group starts each goroutine under the group's context,
// refuses new ones once it is closing, and Stop cancels that context and
// waits, within a deadline, for every goroutine it started to return.
//
// The shape is the same whether the goroutines are plain ones or tasks on
// a pool of workers (NewOn): one owner per goroutine, one end for all.
package startstop

import (
	"context"
	"errors"
	"sync"
)

// ErrStopped is the cause of a group's context once Stop has cancelled it.
var ErrStopped = errors.New("startstop: stopped")

// ErrClosed is returned by Go once the group is closing.
var ErrClosed = errors.New("startstop: group closed")

// Group owns a set of goroutines. The zero Group is not usable: make one
// with New or NewOn.
//
// Its context is made when first needed (the first Go, or Context): a
// group that never starts a goroutine, as most of an idle job's never
// do, holds none. A Cancel before then is kept, and the context is made
// cancelled with its cause.
type Group struct {
	parent context.Context // whose values the group's context has
	spawn  func(func()) bool

	mu     sync.Mutex
	closed bool
	ctx    context.Context // nil until first needed (ctxLocked); then set once
	cancel context.CancelCauseFunc
	cause  error // a Cancel's cause while ctx was nil
	wg     sync.WaitGroup
}

// New returns a group whose goroutines run under a context derived from
// parent's values but not its cancellation: only Cancel or Stop end it,
// so that a caller's request context cannot end what the group owns.
func New(parent context.Context) *Group {
	return NewOn(parent, nil)
}

// NewOn returns a group like New whose goroutines are started by spawn
// (a pool of workers, say), which runs its argument on a goroutine of its
// own and reports true, or reports false without running it when it is
// closing. A nil spawn starts plain goroutines.
func NewOn(parent context.Context, spawn func(func()) bool) *Group {
	return &Group{parent: parent, spawn: spawn}
}

// Context returns the context of the group's goroutines: cancelled by
// Cancel or Stop.
func (g *Group) Context() context.Context {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ctxLocked()
}

// ctxLocked returns the group's context, made by the first call: set once
// under g.mu and never changed, so that a goroutine the group started
// after it was made reads it without the lock. g.mu is held.
func (g *Group) ctxLocked() context.Context {
	if g.ctx == nil {
		g.ctx, g.cancel = context.WithCancelCause(context.WithoutCancel(g.parent))
		if g.cause != nil {
			g.cancel(g.cause)
		}
	}
	return g.ctx
}

// Go runs f on a goroutine the group owns, passing it the group's context,
// and returns nil; once the group is closing (Close, Stop) it returns
// ErrClosed without running f, as when spawn refuses it.
func (g *Group) Go(f func(ctx context.Context)) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrClosed
	}
	g.ctxLocked() // made before the goroutine starts, which reads it
	g.wg.Add(1)
	run := func() {
		defer g.wg.Done()
		f(g.ctx)
	}
	if g.spawn == nil {
		go run()
		return nil
	}
	if !g.spawn(run) {
		g.wg.Done()
		return ErrClosed
	}
	return nil
}

// Closed reports whether the group refuses new goroutines.
func (g *Group) Closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// Close makes the group refuse new goroutines; those running go on.
func (g *Group) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// Cancel cancels the group's context with cause (ErrStopped if nil);
// before the context is made, it is made cancelled, with the first
// Cancel's cause.
func (g *Group) Cancel(cause error) {
	if cause == nil {
		cause = ErrStopped
	}
	g.mu.Lock()
	if g.ctx == nil {
		if g.cause == nil {
			g.cause = cause
		}
		g.mu.Unlock()
		return
	}
	cancel := g.cancel
	g.mu.Unlock()
	cancel(cause)
}

// Wait waits until every goroutine the group started has returned and
// returns nil, or until ctx ends and returns its error. The goroutine
// that waits on Wait's behalf outlives an early return only as long as
// the group's goroutines run (those that ignore their context).
func (g *Group) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { // owned here: ends with the group's last goroutine
		g.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop closes the group, cancels its context with ErrStopped and waits
// for its goroutines as Wait does.
func (g *Group) Stop(ctx context.Context) error {
	g.Close()
	g.Cancel(ErrStopped)
	return g.Wait(ctx)
}
