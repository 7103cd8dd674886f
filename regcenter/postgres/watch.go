package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/internal/backend"
)

// Watches read the change log. One dispatcher goroutine per center reads
// the entries after the last revision it delivered (pos), maps each to the
// node and children events ZooKeeper would give, and calls the
// subscribers, in revision order. A listener goroutine holds a connection
// of its own that LISTENs on the channel every write notifies, and wakes
// the dispatcher; the dispatcher also reads every pollEvery, and after the
// listener reconnects, so a notification lost with a connection costs a
// delay, never an event.
//
// A subscription made by WatchNow starts pending: WatchNow reads the
// node's state (at the namespace's revision R, in the same statement),
// then hands the subscription to the dispatcher with R; the dispatcher
// delivers what it buffered for it after R, then every later event. A
// subscription made by Watch starts at the dispatcher's position with an
// EventResync.

type watchKey struct {
	path string
	kind regcenter.WatchKind
}

// revEvent is an event and the revision it came from.
type revEvent struct {
	rev int64
	ev  regcenter.Event
}

type sub struct {
	key watchKey
	fn  func(regcenter.Event)

	// Owned by the dispatcher once registered, under the table's lock.
	live      bool
	from      int64 // events at or below this revision are not delivered
	buf       []revEvent
	resync    bool // a gap happened while pending: deliver EventResync at flush
	cancelled bool
	resets    int64 // the table's resets when it subscribed
}

type taskKind int

const (
	taskArm    taskKind = iota + 1 // start a sub at the dispatcher's position, with EventResync
	taskFlush                      // start a pending sub from its revision
	taskResync                     // EventResync to every sub (new session)
	taskHold                       // wait until hold is closed (tests)
)

type task struct {
	kind taskKind
	s    *sub
	hold chan struct{}
}

type watchTable struct {
	done   <-chan struct{} // the center is closing
	signal chan struct{}   // tasks queued
	kick   chan struct{}   // the log may hold new entries

	mu    sync.Mutex
	subs  map[watchKey]map[*sub]struct{}
	tasks []task

	// The dispatcher's position: the last log entry delivered.
	posRev int64
	posI   int32

	// seen is the newest revision a WatchNow read the state at: the
	// namespace cannot be behind it unless the database went back.
	seen int64

	// resets counts the times the position was moved to a revision
	// the log had reached before (reposition); resetPos is the latest.
	resets, resetPos int64

	// serverChanged is set when a new connection reached another server
	// than the connections before it (Center.identify).
	serverChanged atomic.Bool
}

func newWatchTable() *watchTable {
	return &watchTable{signal: make(chan struct{}, 1), kick: make(chan struct{}, 1), subs: map[watchKey]map[*sub]struct{}{}}
}

func (w *watchTable) setStart(rev int64) {
	w.mu.Lock()
	w.posRev, w.posI = rev, 1<<30
	w.mu.Unlock()
}

func (w *watchTable) enqueue(t task) {
	w.mu.Lock()
	w.tasks = append(w.tasks, t)
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

func (w *watchTable) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *watchTable) resyncAll() { w.enqueue(task{kind: taskResync}) }

// subscribe registers a pending subscription and returns it with its
// cancel.
func (w *watchTable) subscribe(key watchKey, fn func(regcenter.Event)) (*sub, func()) {
	s := &sub{key: key, fn: fn}
	w.mu.Lock()
	s.resets = w.resets
	m := w.subs[key]
	if m == nil {
		m = map[*sub]struct{}{}
		w.subs[key] = m
	}
	m[s] = struct{}{}
	w.mu.Unlock()
	return s, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		s.cancelled = true
		s.buf = nil
		if m := w.subs[key]; m != nil {
			delete(m, s)
			if len(m) == 0 {
				delete(w.subs, key)
			}
		}
	}
}

// count returns the number of watched (path, kind) pairs.
func (w *watchTable) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.subs)
}

// call calls s.fn with ev unless s was cancelled meanwhile.
func (w *watchTable) call(s *sub, ev regcenter.Event) {
	w.mu.Lock()
	dead := s.cancelled
	w.mu.Unlock()
	if !dead {
		s.fn(ev)
	}
}

// runTasks runs the queued tasks, in order, on the dispatcher.
func (w *watchTable) runTasks() {
	w.mu.Lock()
	ts := w.tasks
	w.tasks = nil
	w.mu.Unlock()
	for _, t := range ts {
		switch t.kind {
		case taskArm:
			w.mu.Lock()
			t.s.live, t.s.from, t.s.buf, t.s.resync = true, w.posRev, nil, false
			w.mu.Unlock()
			w.call(t.s, regcenter.Event{Type: regcenter.EventResync, Path: t.s.key.path})
		case taskFlush:
			w.mu.Lock()
			buf, resync := t.s.buf, t.s.resync
			t.s.live, t.s.buf, t.s.resync = true, nil, false
			from := t.s.from
			w.mu.Unlock()
			if resync {
				w.call(t.s, regcenter.Event{Type: regcenter.EventResync, Path: t.s.key.path})
			}
			for _, e := range buf {
				if e.rev > from {
					w.call(t.s, e.ev)
				}
			}
		case taskResync:
			w.resyncEveryone()
		case taskHold:
			select {
			case <-t.hold:
			case <-w.done:
			}
		}
	}
}

// resyncEveryone delivers EventResync to every live subscription and
// marks the pending ones to get it when they start.
func (w *watchTable) resyncEveryone() {
	w.mu.Lock()
	live := w.markResync()
	w.mu.Unlock()
	w.sendResync(live)
}

// reposition moves the dispatcher's position to the namespace's revision
// pos when it cannot go on from where it was (the log was pruned past it,
// the database went back, or the server is another one), and
// resynchronises every subscription. A revision at or below the one a
// subscription started at may now carry a change it has not seen: each
// starts again at pos at the latest, and a pending one drops what it
// buffered (the resync covers it).
func (w *watchTable) reposition(pos int64) {
	w.mu.Lock()
	w.posRev, w.posI = pos, 1<<30
	w.resets++
	w.resetPos = pos
	w.seen = min(w.seen, pos)
	for _, m := range w.subs {
		for s := range m {
			s.from = min(s.from, pos)
			if !s.live {
				s.buf = nil
			}
		}
	}
	live := w.markResync()
	w.mu.Unlock()
	w.sendResync(live)
}

// markResync marks the pending subscriptions to get EventResync when they
// start and returns the live ones, which get it now. w.mu is held.
func (w *watchTable) markResync() []*sub {
	var live []*sub
	for _, m := range w.subs {
		for s := range m {
			if s.live {
				live = append(live, s)
			} else {
				s.resync = true
			}
		}
	}
	return live
}

// sendResync delivers EventResync to subs.
func (w *watchTable) sendResync(live []*sub) {
	for _, s := range live {
		w.call(s, regcenter.Event{Type: regcenter.EventResync, Path: s.key.path})
	}
}

// deliver hands ev, from revision rev, to the subscriptions of key: live
// ones are called, pending ones buffer it.
func (w *watchTable) deliver(key watchKey, rev int64, ev regcenter.Event) {
	w.mu.Lock()
	m := w.subs[key]
	var now []*sub
	for s := range m {
		switch {
		case !s.live:
			s.buf = append(s.buf, revEvent{rev: rev, ev: ev})
		case rev > s.from:
			now = append(now, s)
		}
	}
	w.mu.Unlock()
	for _, s := range now {
		w.call(s, ev)
	}
}

// Watch registers a persistent watch; fn first gets EventResync once it
// is armed.
func (c *Center) Watch(p string, kind regcenter.WatchKind, fn func(regcenter.Event)) (cancel func()) {
	s, cancel := c.watches.subscribe(watchKey{path: p, kind: kind}, fn)
	c.watches.enqueue(task{kind: taskArm, s: s})
	return cancel
}

// WatchNow registers a persistent watch and reads the node's state (with
// the reads of other WatchNow calls waiting then: readgroup.go); every
// change after that read reaches fn.
func (c *Center) WatchNow(ctx context.Context, p string, kind regcenter.WatchKind, fn func(regcenter.Event)) (regcenter.WatchState, func(), error) {
	if c.closed.Load() {
		return regcenter.WatchState{}, func() {}, backend.WrapPath("watch", p, regcenter.ErrClosed)
	}
	s, cancel := c.watches.subscribe(watchKey{path: p, kind: kind}, fn)
	var st regcenter.WatchState
	var rev int64
	cp, err := backend.CleanPath(p)
	if err == nil {
		r := &readReq{path: cp, children: kind == regcenter.WatchChildren}
		if err = c.groupRead(ctx, r); err == nil {
			st.Exists, rev = r.exists, r.rev
			switch {
			case !r.children:
				st.Stat = r.stat
			case r.exists:
				st.Children = r.kids
			}
		}
	}
	if err != nil {
		c.watches.enqueue(task{kind: taskArm, s: s})
		return regcenter.WatchState{}, cancel, backend.WrapPath("watch", p, err)
	}
	c.watches.mu.Lock()
	s.from = rev
	c.watches.seen = max(c.watches.seen, rev)
	if s.resets != c.watches.resets {
		// The log was repositioned since the read began, which may
		// have been on the server before.
		s.from = min(rev, c.watches.resetPos)
	}
	c.watches.mu.Unlock()
	c.watches.enqueue(task{kind: taskFlush, s: s})
	return st, cancel, nil
}

// WatchCount returns the number of watched (path, kind) pairs.
func (c *Center) WatchCount() int { return c.watches.count() }

// watchLoop is the dispatcher: it runs the queued tasks and reads the
// change log when woken, and every pollEvery, until ctx ends.
func (c *Center) watchLoop(ctx context.Context) {
	w := c.watches
	timer := time.NewTimer(pollEvery)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.signal:
		case <-w.kick:
		case <-timer.C:
		}
		w.runTasks()
		wait := pollEvery
		for {
			more, err := c.readLog(ctx)
			if err != nil {
				if ctx.Err() == nil {
					c.log.Debug("reading the change log", "err", err)
				}
				wait = 200 * time.Millisecond
				break
			}
			w.runTasks()
			if !more {
				break
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// readLog reads one page of the log after the dispatcher's position and
// delivers it; more says a full page was read. A position the log no
// longer holds (pruned) resynchronises every watch and moves on to the
// namespace's current revision.
func (c *Center) readLog(ctx context.Context) (more bool, err error) {
	w := c.watches
	w.mu.Lock()
	// seen is taken before the read: a revision a WatchNow read before
	// then is one this read's snapshot has reached, on the same history.
	posRev, posI, seen := w.posRev, w.posI, w.seen
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.SessionTimeout)
	defer cancel()
	rows, err := c.pool.Query(ctx, `SELECT ns.pruned, ns.rev, l.rev, l.i, l.path, l.kind
		FROM shardjob_rc_ns ns LEFT JOIN LATERAL (
			SELECT rev, i, path, kind FROM shardjob_rc_log
			WHERE ns = $1 AND (rev, i) > ($2, $3) ORDER BY rev, i LIMIT $4) l ON true
		WHERE ns.ns = $1`, c.ns, posRev, posI, logPage)
	if err != nil {
		return false, err
	}
	type entry struct {
		rev  int64
		i    int32
		path string
		kind int16
	}
	var (
		entries     []entry
		pruned, cur int64
	)
	for rows.Next() {
		var r, ii *int64
		var p *string
		var k *int16
		if err := rows.Scan(&pruned, &cur, &r, &ii, &p, &k); err != nil {
			rows.Close()
			return false, err
		}
		if r != nil {
			entries = append(entries, entry{rev: *r, i: int32(*ii), path: *p, kind: *k})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	// A connection to another server is identified before its first
	// query, so a read on the new server finds the flag set.
	changed := w.serverChanged.Swap(false)
	if cur >= max(posRev, seen) && !changed {
		c.see(cur)
	}
	if posRev < pruned || cur < max(posRev, seen) || changed {
		// Behind the retention; or ahead of the namespace itself (the
		// position, or a revision a watch started at): the database
		// went back (restored from a backup, or a failover to a
		// standby that had not received the latest commits), and the
		// revisions after cur will be reused by other changes; or on
		// another server, which may have gone back and been written to
		// past the position since: the changes that reused the
		// revisions up to it would be skipped.
		// Revisions the client saw may come again for other nodes.
		c.seen.Store(cur)
		c.log.Warn("watches cannot go on from their position in the change log; resynchronising them",
			"position", posRev, "watch_read_at", seen, "pruned_to", pruned, "namespace_revision", cur, "server_changed", changed)
		w.reposition(cur)
		return true, nil
	}
	for _, e := range entries {
		c.dispatch(e.rev, e.path, e.kind)
		w.mu.Lock()
		w.posRev, w.posI = e.rev, e.i
		w.mu.Unlock()
	}
	return len(entries) == logPage, nil
}

// dispatch maps one log entry to the events of the watches it concerns.
func (c *Center) dispatch(rev int64, p string, kind int16) {
	w := c.watches
	parent := parentOf(p)
	switch kind {
	case 1:
		w.deliver(watchKey{p, regcenter.WatchNode}, rev, regcenter.Event{Type: regcenter.EventCreated, Path: p})
		w.deliver(watchKey{p, regcenter.WatchChildren}, rev, regcenter.Event{Type: regcenter.EventCreated, Path: p})
		if parent != "" {
			w.deliver(watchKey{parent, regcenter.WatchChildren}, rev, regcenter.Event{Type: regcenter.EventChildrenChanged, Path: parent})
		}
	case 2:
		w.deliver(watchKey{p, regcenter.WatchNode}, rev, regcenter.Event{Type: regcenter.EventDeleted, Path: p})
		w.deliver(watchKey{p, regcenter.WatchChildren}, rev, regcenter.Event{Type: regcenter.EventDeleted, Path: p})
		if parent != "" {
			w.deliver(watchKey{parent, regcenter.WatchChildren}, rev, regcenter.Event{Type: regcenter.EventChildrenChanged, Path: parent})
		}
	case 3:
		w.deliver(watchKey{p, regcenter.WatchNode}, rev, regcenter.Event{Type: regcenter.EventDataChanged, Path: p})
	}
}

// parentOf returns p's parent path, "" for the root.
func parentOf(p string) string {
	if p == "/" {
		return ""
	}
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

// listenLoop keeps a connection of its own LISTENing on the channel the
// writes notify, and wakes the dispatcher for each notification of this
// namespace, and after every (re)connection. It ends with ctx.
func (c *Center) listenLoop(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		listened, err := c.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if listened {
			backoff = 100 * time.Millisecond
		}
		c.log.Debug("the change log's listener lost its connection; reconnecting", "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// listenOnce connects, listens and waits for notifications until the
// connection fails or ctx ends; listened says it got as far as LISTEN.
func (c *Center) listenOnce(ctx context.Context) (listened bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	conn, err := pgx.ConnectConfig(cctx, c.pgcfg)
	cancel()
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx) // the connection is done with either way
	}()
	lctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	_, err = conn.Exec(lctx, "LISTEN "+notifyChannel)
	cancel()
	if err != nil {
		return false, err
	}
	c.watches.wake() // whatever was written while not listening
	for {
		// Wait at most a session timeout, then prove the connection
		// alive: a connection cut without a word (a server frozen, a
		// firewall's idle timeout) would otherwise hold the listener
		// until TCP gave up. The dispatcher's polls go on meanwhile.
		wctx, cancel := context.WithTimeout(ctx, c.cfg.SessionTimeout)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return true, ctx.Err()
			}
			if !pgconn.Timeout(err) && !errors.Is(err, context.DeadlineExceeded) {
				return true, fmt.Errorf("waiting for notifications: %w", err)
			}
			pctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return true, fmt.Errorf("the listening connection does not answer: %w", err)
			}
			continue
		}
		if n.Payload == c.ns {
			c.watches.wake()
		}
	}
}
