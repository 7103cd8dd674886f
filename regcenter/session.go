package regcenter

import (
	"context"
	"fmt"
	"time"
)

// Session is one registry session as shardjob sees it (a ZooKeeper
// session, or an etcd lease): the lease under
// which ephemeral nodes, leadership and running items are held. It ends
// when the server expires it, when the center is closed, or when its lease
// lapses: the client has heard nothing from the server for two thirds of the
// negotiated session timeout, so the server may be about to expire it.
// Ending early is deliberate: everything that depends on the session is
// stopped before anyone else could take it over.
//
// A Session never comes back; after it ends the center establishes a new one
// and announces it with a [SessionNew] event.
type Session struct {
	id     int64
	gen    uint64
	ctx    context.Context
	cancel context.CancelCauseFunc
	clock  LeaseClock // the center's, whose lease every session reports on
}

// ID returns ZooKeeper's session id, or the etcd lease id: the ephemeral
// owner of nodes this session creates.
func (s *Session) ID() int64 { return s.id }

// Ctx returns a context cancelled, with cause wrapping [ErrSessionLost]
// or [ErrClosed], when the session ends.
func (s *Session) Ctx() context.Context { return s.ctx }

// Done is closed when the session ends.
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Err returns nil while the session is live, else why it ended.
func (s *Session) Err() error {
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// Check returns nil only if the session is live and its lease is current
// on the monotonic clock right now. It is the check to make right before a
// side effect: a process that was frozen (GC pause, SIGSTOP) past its
// session timeout learns here that its lease is gone, even before the
// center's watchdog has run.
func (s *Session) Check() error {
	if err := s.Err(); err != nil {
		return err
	}
	if left := s.clock.LeaseLeft(); left <= 0 {
		return fmt.Errorf("%w: no word from %s for %v (lease %v)", ErrSessionLost, s.clock.Backend(), s.clock.SinceRead().Round(time.Millisecond), s.clock.LeaseDuration())
	}
	return nil
}

// String identifies the session for logs.
func (s *Session) String() string { return fmt.Sprintf("0x%x/%d", s.id, s.gen) }
