// Package election elects one leader among the instances of a job, on the
// job's registry (any [regcenter.Center]: ZooKeeper or etcd).
//
// Each candidate creates an ephemeral sequential node under a latch
// directory; the lowest sequence leads. A candidate watches only its
// predecessor, so a leader's departure wakes exactly one successor (no herd).
// The leader also writes its id to a host node, for operators.
//
// What is guaranteed: at most one candidate per session believes it leads at
// any time, and [Election.Fence] returns a transaction op that makes a write
// succeed only while the leader's latch node, and so its session, still
// exists. What is not guaranteed: that a leader's local code stops the
// instant leadership ends — callbacks learn of it asynchronously, which is why
// every write a leader makes must carry the fence.
package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/startstop"
	"github.com/shardjob/shardjob/regcenter"
)

// evaluateTimeout bounds one evaluation's registry requests; a failed
// evaluation is retried after the next reconnection or change.
const evaluateTimeout = 10 * time.Second

// ErrNotLeader is returned by Fence when this candidate does not lead.
var ErrNotLeader = errors.New("election: not the leader")

// Callbacks are told about leadership. Both run on the election's own
// goroutine, one at a time, and should return promptly.
type Callbacks struct {
	// OnElected runs when this candidate becomes leader. ctx is cancelled
	// when leadership ends (resignation, session loss, Close).
	OnElected func(ctx context.Context)
	// OnRevoked runs when leadership ends, after ctx is cancelled. It
	// always follows an OnElected.
	OnRevoked func()
}

// Election is one candidate. Create it with [New]; start it with
// [Election.Campaign].
type Election struct {
	rc    regcenter.Center
	dir   string
	host  string
	id    string
	cb    Callbacks
	log   *slog.Logger
	group *startstop.Group // owns the evaluation goroutine; Close stops it

	// An evaluation runs on a goroutine only while there is work: pokes
	// that arrive meanwhile coalesce into one more pass. An idle election
	// holds no goroutine, so thousands of jobs cost none.
	kickMu  sync.Mutex
	running bool
	again   bool

	campaign sync.Mutex // serializes Campaign and Resign

	mu          sync.Mutex
	latch       string // our latch node, "" when none
	latchSess   *regcenter.Session
	latchCheck  regcenter.Op // the check of latch, made once per latch: every fenced transaction carries it
	leading     bool
	leaderStop  context.CancelFunc
	watchCancel func()
	watchPath   string // the node watchCancel watches
}

// New returns a candidate with id (the server id) competing under dir, with
// the leader's id written to host.
func New(rc regcenter.Center, dir, host, id string, cb Callbacks, log *slog.Logger) *Election {
	if log == nil {
		log = slog.Default()
	}
	return &Election{rc: rc, dir: dir, host: host, id: id, cb: cb, log: log,
		group: startstop.New(context.Background())}
}

// Campaign enters the election under the center's current session (or
// re-enters it after a new session) and returns once the candidate's latch
// node exists. Leadership arrives later through OnElected.
func (e *Election) Campaign(ctx context.Context) error {
	e.campaign.Lock()
	defer e.campaign.Unlock()
	sess := e.rc.Session()
	e.mu.Lock()
	if e.latch != "" && e.latchSess == sess && sess.Err() == nil {
		e.mu.Unlock()
		e.poke()
		return nil
	}
	old, oldSess := e.latch, e.latchSess
	e.mu.Unlock()
	if old != "" && oldSess != nil {
		// A latch from an earlier session: normally gone with it, but if the
		// session survived a lapsed lease it must go now. Only if it is
		// still that session's: after ZooKeeper lost its data, sequence
		// numbers start again and the name may be another candidate's.
		ok, st, err := e.rc.Exists(ctx, old)
		if err != nil {
			return fmt.Errorf("election: look at old latch %s: %w", old, err)
		}
		if ok && st.EphemeralOwner == oldSess.ID() {
			if err := e.rc.Delete(ctx, old, st.Version); err != nil && !errors.Is(err, regcenter.ErrNoNode) && !errors.Is(err, regcenter.ErrBadVersion) {
				return fmt.Errorf("election: remove old latch %s: %w", old, err)
			}
		}
	}
	p, err := e.rc.Create(ctx, e.dir+"/n_", []byte(e.id), regcenter.EphemeralSequential)
	if err != nil {
		return fmt.Errorf("election: join %s: %w", e.dir, err)
	}
	e.mu.Lock()
	e.latch, e.latchSess, e.latchCheck = p, sess, regcenter.CheckOp{Path: p, Version: 0}
	e.mu.Unlock()
	e.poke()
	return nil
}

func (e *Election) poke() {
	e.kickMu.Lock()
	defer e.kickMu.Unlock()
	if e.running {
		e.again = true
		return
	}
	if e.group.Go(e.loop) != nil {
		return // closed
	}
	e.running = true
}

// IsLeader reports whether this candidate currently believes it leads.
func (e *Election) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading && e.latchSess != nil && e.latchSess.Err() == nil
}

// Fence returns an op that fails a transaction unless this candidate's latch
// node still exists, i.e. unless it still leads under a live session.
func (e *Election) Fence() (regcenter.Op, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leading || e.latch == "" || e.latchSess == nil || e.latchSess.Err() != nil {
		return nil, ErrNotLeader
	}
	return e.latchCheck, nil
}

// SessionFence returns an op that fails a transaction unless this
// candidate's latch node of sess still exists: the candidate is still in
// the election under that very session (and generation). Any instance can
// use it to fence writes that must not land after its session ended.
func (e *Election) SessionFence(sess *regcenter.Session) (regcenter.Op, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.latch == "" || e.latchSess != sess || sess.Err() != nil {
		return nil, false
	}
	return e.latchCheck, true
}

// Leader returns the current leader's id as written in the host node, or ""
// when there is none.
func (e *Election) Leader(ctx context.Context) (string, error) {
	b, _, err := e.rc.Get(ctx, e.host)
	if errors.Is(err, regcenter.ErrNoNode) {
		return "", nil
	}
	return string(b), err
}

// Resign leaves the election: the latch node is deleted (so a successor
// takes over at once, without waiting for a session timeout) and leadership,
// if held, is given up. Campaign may be called again later.
func (e *Election) Resign(ctx context.Context) error {
	e.campaign.Lock()
	defer e.campaign.Unlock()
	e.mu.Lock()
	latch := e.latch
	wasLeading := e.leading
	e.latch, e.latchSess, e.latchCheck = "", nil, nil
	e.mu.Unlock()
	e.revoke()
	var errs []error
	if wasLeading {
		if err := e.deleteHostIfOurs(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if latch != "" {
		if err := e.rc.Delete(ctx, latch, -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
			errs = append(errs, fmt.Errorf("election: resign %s: %w", latch, err))
		}
	}
	return errors.Join(errs...)
}

// Close stops the election's goroutine, revoking leadership locally. It
// does not delete nodes; call Resign first for that.
func (e *Election) Close() {
	// No deadline, as callbacks must return promptly and every ZooKeeper
	// request of an evaluation is bounded by evaluateTimeout; a Wait on a
	// context that never ends returns nil.
	if err := e.group.Stop(context.Background()); err != nil {
		e.log.Warn("leader election: stop", "dir", e.dir, "err", err)
	}
	e.cancelWatch()
	e.revoke()
}

func (e *Election) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			e.kickMu.Lock()
			e.running = false
			e.kickMu.Unlock()
			return
		default:
		}
		if err := e.evaluate(); err != nil {
			e.log.Warn("leader election", "dir", e.dir, "err", err)
		}
		e.kickMu.Lock()
		if !e.again {
			e.running = false
			e.kickMu.Unlock()
			return
		}
		e.again = false
		e.kickMu.Unlock()
	}
}

func (e *Election) cancelWatch() {
	e.mu.Lock()
	c := e.watchCancel
	e.watchCancel, e.watchPath = nil, ""
	e.mu.Unlock()
	if c != nil {
		c()
	}
}

// evaluate decides whether we lead; if not, it watches our predecessor.
func (e *Election) evaluate() error {
	e.mu.Lock()
	latch, sess := e.latch, e.latchSess
	e.mu.Unlock()
	if latch == "" || sess == nil || sess.Err() != nil {
		e.revoke()
		return nil
	}
	ctx, cancel := context.WithTimeout(sess.Ctx(), evaluateTimeout)
	defer cancel()
	kids, err := e.rc.Children(ctx, e.dir)
	if err != nil {
		e.retryAfterReconnect()
		return err
	}
	sort.Slice(kids, func(i, j int) bool { return seq(kids[i]) < seq(kids[j]) })
	mine := path.Base(latch)
	idx := -1
	for i, k := range kids {
		if k == mine {
			idx = i
			break
		}
	}
	switch {
	case idx < 0:
		// Our latch is gone (session ended or someone deleted it).
		e.revoke()
		return nil
	case idx == 0:
		// Watch our own latch: its loss (deletion, session end) revokes.
		e.watchOnly(latch)
		return e.lead(ctx, sess)
	default:
		e.revoke()
		e.watchOnly(e.dir + "/" + kids[idx-1])
		return nil
	}
}

// watchOnly makes path the one node this candidate watches. Watching the
// same node again is a no-op: re-arming would deliver another resync and
// with it another evaluation, a loop.
func (e *Election) watchOnly(p string) {
	e.mu.Lock()
	if e.watchPath == p && e.watchCancel != nil {
		e.mu.Unlock()
		return
	}
	old := e.watchCancel
	e.watchCancel, e.watchPath = nil, ""
	e.mu.Unlock()
	if old != nil {
		old()
	}
	c := e.rc.Watch(p, regcenter.WatchNode, func(ev regcenter.Event) {
		if ev.Type != regcenter.EventDataChanged {
			e.poke()
		}
	})
	e.mu.Lock()
	e.watchCancel, e.watchPath = c, p
	e.mu.Unlock()
}

func (e *Election) retryAfterReconnect() {
	// Any event on our own latch — at the latest the resync after the next
	// reconnection — brings another evaluation.
	e.mu.Lock()
	latch := e.latch
	e.mu.Unlock()
	if latch != "" {
		e.watchOnly(latch)
	}
}

func (e *Election) lead(ctx context.Context, sess *regcenter.Session) error {
	e.mu.Lock()
	already := e.leading
	e.mu.Unlock()
	if already {
		return nil
	}
	// Write our id into host, replacing a stale host left by a predecessor
	// whose session is ending.
	if err := e.writeHost(ctx, sess); err != nil {
		e.retryAfterReconnect()
		return err
	}
	lctx, stop := context.WithCancel(sess.Ctx())
	e.mu.Lock()
	if e.latchSess != sess || e.latch == "" {
		e.mu.Unlock()
		stop()
		return nil
	}
	e.leading, e.leaderStop = true, stop
	e.mu.Unlock()
	// Revoke when the session ends even if no watch event arrives.
	context.AfterFunc(lctx, e.poke)
	e.log.Info("elected leader", "dir", e.dir, "id", e.id)
	if e.cb.OnElected != nil {
		e.cb.OnElected(lctx)
	}
	return nil
}

func (e *Election) writeHost(ctx context.Context, sess *regcenter.Session) error {
	for attempt := 0; attempt < 3; attempt++ {
		_, err := e.rc.Create(ctx, e.host, []byte(e.id), regcenter.Ephemeral)
		if err == nil {
			return nil
		}
		if !errors.Is(err, regcenter.ErrNodeExists) {
			return fmt.Errorf("election: write host: %w", err)
		}
		_, st, err := e.rc.Get(ctx, e.host)
		if errors.Is(err, regcenter.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("election: read host: %w", err)
		}
		if st.EphemeralOwner == sess.ID() {
			_, err = e.rc.Set(ctx, e.host, []byte(e.id), -1)
			return err
		}
		if err := e.rc.Delete(ctx, e.host, st.Version); err != nil && !errors.Is(err, regcenter.ErrNoNode) && !errors.Is(err, regcenter.ErrBadVersion) {
			return fmt.Errorf("election: replace stale host: %w", err)
		}
	}
	return fmt.Errorf("election: host node %s keeps changing", e.host)
}

func (e *Election) deleteHostIfOurs(ctx context.Context) error {
	b, st, err := e.rc.Get(ctx, e.host)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("election: read host: %w", err)
	}
	if string(b) != e.id {
		return nil
	}
	if err := e.rc.Delete(ctx, e.host, st.Version); err != nil && !errors.Is(err, regcenter.ErrNoNode) && !errors.Is(err, regcenter.ErrBadVersion) {
		return fmt.Errorf("election: delete host: %w", err)
	}
	return nil
}

func (e *Election) revoke() {
	e.mu.Lock()
	if !e.leading {
		e.mu.Unlock()
		return
	}
	e.leading = false
	stop := e.leaderStop
	e.leaderStop = nil
	e.mu.Unlock()
	stop()
	e.log.Info("leadership ended", "dir", e.dir, "id", e.id)
	if e.cb.OnRevoked != nil {
		e.cb.OnRevoked()
	}
}

func seq(name string) string {
	if i := strings.LastIndex(name, "_"); i >= 0 {
		return name[i+1:]
	}
	return name
}
