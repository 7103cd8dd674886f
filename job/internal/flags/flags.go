package flags

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Flags are this server's operator flags for a job as last read, each
// read and replaced whole, with no lock: a fire reads them once, as they
// are at that moment. What it needs to read them is handed to it when it
// is made (New).
type Flags struct {
	rc     regcenter.Center
	paths  layout.Job
	server string
	log    *slog.Logger
	// timeout bounds a read of its own (ReadDisabledItems).
	timeout time.Duration

	paused   atomic.Bool                  // servers/{me}/paused exists
	disabled atomic.Bool                  // servers/{me}/disabled exists (events only)
	items    atomic.Pointer[map[int]bool] // items kept out of every fire; never changed in place
}

// New returns the flags of server in the job at paths, none set yet; a
// read of its own is bounded by timeout.
func New(rc regcenter.Center, paths layout.Job, server string, log *slog.Logger, timeout time.Duration) *Flags {
	return &Flags{rc: rc, paths: paths, server: server, log: log, timeout: timeout}
}

// Seen is what a read of this server's flags found.
type Seen struct {
	// Status: the instance's status node exists.
	Status bool
	// Paused, Disabled, Shutdown, Trigger and Backfill: the flag of that
	// name is set.
	Paused, Disabled, Shutdown, Trigger, Backfill bool
}

// SeenIn is what the children kids of this server's node say.
func SeenIn(kids []string) Seen {
	return Seen{
		Status:   slices.Contains(kids, layout.Status),
		Paused:   slices.Contains(kids, layout.Paused),
		Disabled: slices.Contains(kids, layout.Disabled),
		Shutdown: slices.Contains(kids, layout.Shutdown),
		Trigger:  slices.Contains(kids, layout.Trigger),
		Backfill: slices.Contains(kids, layout.BackfillFlag),
	}
}

// Read reads this server's flags under sess, and false when it could not
// (a failure logged while sess lives; no server node is none).
func (f *Flags) Read(ctx context.Context, sess *regcenter.Session) (Seen, bool) {
	kids, err := f.rc.Children(ctx, f.paths.Server(f.server))
	if err != nil {
		if !errors.Is(err, regcenter.ErrNoNode) && sess.Err() == nil {
			f.log.Warn("reading server flags", "err", err)
		}
		return Seen{}, false
	}
	return SeenIn(kids), true
}

// TakeTrigger removes the trigger flag, and reports whether the trigger
// is this instance's to run: a trigger runs once, and a new flag set while
// this one runs is a new trigger. A failure is logged, and runs nothing.
func (f *Flags) TakeTrigger(ctx context.Context) bool { return f.take(ctx, layout.Trigger) }

// TakeBackfill removes the backfill flag, and reports whether it was this
// instance's to act on (see TakeTrigger).
func (f *Flags) TakeBackfill(ctx context.Context) bool { return f.take(ctx, layout.BackfillFlag) }

func (f *Flags) take(ctx context.Context, flag string) bool {
	err := f.rc.Delete(ctx, f.paths.Flag(f.server, flag), -1)
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		f.log.Warn("removing "+flag+" flag", "err", err)
		return false
	}
	return true
}

// Pause sets this server's paused flag for the job
// (servers/{server}/paused, a persistent node), as `shardjob pause` does;
// a flag set already is not an error.
func (f *Flags) Pause(ctx context.Context) error {
	_, err := f.rc.Create(ctx, f.paths.Flag(f.server, layout.Paused), nil, regcenter.Persistent)
	if errors.Is(err, regcenter.ErrNodeExists) {
		return nil
	}
	return err
}

// RestoreStatus re-creates this instance's status node when it vanished
// while the instance is registered under a live session (registered
// says so): someone deleted it (an operator, a script, a wrong recursive
// delete). Without it the leader takes this instance for gone and its
// items move, while it stays up and idle. Before the instance registered,
// or after its session ended, there is nothing to restore: registration
// creates the node.
func (f *Flags) RestoreStatus(ctx context.Context, sess *regcenter.Session, registered bool) {
	if !registered || sess.Err() != nil {
		return
	}
	p := f.paths.Flag(f.server, layout.Status)
	_, err := f.rc.Create(ctx, p, []byte(layout.StatusReady), regcenter.Ephemeral)
	switch {
	case err == nil:
		f.log.Warn("this instance's status node was deleted while it was online; restored it", "node", p)
	case errors.Is(err, regcenter.ErrNodeExists):
	default:
		f.log.Warn("restoring this instance's deleted status node", "node", p, "err", err)
	}
}

// ReadDisabledItems refreshes the set of items kept out of every fire,
// reading under sess. A failed read (logged while sess lives) or a node
// that does not parse (logged) keeps the previous set.
func (f *Flags) ReadDisabledItems(sess *regcenter.Session) {
	ctx, cancel := context.WithTimeout(sess.Ctx(), f.timeout)
	defer cancel()
	data, _, err := f.rc.Get(ctx, f.paths.DisabledItems())
	set := map[int]bool{}
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
	case err != nil:
		if sess.Err() == nil {
			f.log.Warn("reading disabled items", "err", err)
		}
		return
	default:
		items, perr := layout.ParseItems(string(data))
		if perr != nil {
			f.log.Error("disabled-items node rejected; keeping the previous set", "err", perr)
			return
		}
		for _, it := range items {
			set[it] = true
		}
	}
	f.items.Store(&set)
}

// SetPaused records the paused flag, and reports whether it changed.
func (f *Flags) SetPaused(paused bool) (changed bool) {
	return f.paused.Swap(paused) != paused
}

// SetDisabled records this server's disabled flag, as seen by the flags
// watch (the leader reads it for itself at each reshard), and reports
// whether it changed: only the event is this instance's to give.
func (f *Flags) SetDisabled(disabled bool) (changed bool) {
	return f.disabled.Swap(disabled) != disabled
}

// Paused reports whether this server's paused flag was set when last
// read.
func (f *Flags) Paused() bool { return f.paused.Load() }

// DisabledItems returns the items kept out of every fire, nil for none.
// The map is never changed: ReadDisabledItems replaces it.
func (f *Flags) DisabledItems() map[int]bool {
	if m := f.items.Load(); m != nil {
		return *m
	}
	return nil
}
