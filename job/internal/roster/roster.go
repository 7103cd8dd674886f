package roster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/shardjob/shardjob/internal/startstop"
)

// state is where a scheduler is in its life.
type state int

// The states, in the order a scheduler goes through them.
const (
	stateNew     state = iota // jobs may be added; nothing registered
	stateStarted              // Start has begun: jobs register as they are added
	stateClosed               // Shutdown has begun: nothing more is added or started
)

// Config is what a Roster needs of its runners and of its owner.
type Config[R comparable] struct {
	// Name is the name of the job r runs.
	Name func(r R) string
	// Parents are the jobs r's job runs after.
	Parents func(r R) []string
	// SetAwaited tells r that a job added here runs after its job.
	SetAwaited func(r R)
	// Closed is returned by Add and Start once the roster is closed;
	// Started by Start once started; Duplicate, wrapped with the name, by
	// Add for a name taken.
	Closed, Started, Duplicate error
}

// Roster is a scheduler's table of runners by job name, with its state and
// the awaited names. Its zero value is not usable: make one with New.
type Roster[R comparable] struct {
	c Config[R]

	mu      sync.Mutex
	runners map[string]R
	// awaited are the jobs some job added here runs after (noteLocked).
	awaited map[string]bool
	state   state
}

// New returns an empty roster, in stateNew.
func New[R comparable](c Config[R]) *Roster[R] {
	return &Roster[R]{c: c, runners: map[string]R{}}
}

// Add puts the runner newRunner returns in the table under name, and reports
// whether the roster was started already (the caller then starts it). It
// refuses (newRunner is not called) once closed, under a name taken, and, when
// started and check is not nil, when check refuses the jobs added, given
// in name order, under the lock. The runner's parents are marked awaited.
func (t *Roster[R]) Add(name string, check func(sorted []R) error, newRunner func() R) (started bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state == stateClosed {
		return false, t.c.Closed
	}
	if _, dup := t.runners[name]; dup {
		return false, fmt.Errorf("%w: %q is already added", t.c.Duplicate, name)
	}
	if t.state == stateStarted && check != nil {
		// Started: the parents are added already, or never will be here.
		if err := check(t.sortedLocked()); err != nil {
			return false, err
		}
	}
	r := newRunner()
	t.runners[name] = r
	t.noteByLocked(r)
	return t.state == stateStarted, nil
}

// Start moves the roster from stateNew to stateStarted, after check (when not nil)
// accepted the jobs added, and returns them in name order. It refuses
// with Started or Closed when the roster is not new.
func (t *Roster[R]) Start(check func(sorted []R) error) ([]R, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.state {
	case stateStarted:
		return nil, t.c.Started
	case stateClosed:
		return nil, t.c.Closed
	}
	runners := t.sortedLocked()
	if check != nil {
		if err := check(runners); err != nil {
			return nil, err
		}
	}
	t.state = stateStarted
	return runners, nil
}

// Close moves the roster to stateClosed and returns the jobs added, in name
// order; ok is false when it was closed already.
func (t *Roster[R]) Close() (runners []R, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state == stateClosed {
		return nil, false
	}
	t.state = stateClosed
	return t.sortedLocked(), true
}

// Spawn runs f on g while the roster is started, and reports whether it
// did (not before Start, nor once closed). g.Go is called under the lock,
// so that Close and a Spawn are ordered.
func (t *Roster[R]) Spawn(g *startstop.Group, f func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != stateStarted {
		return false
	}
	return g.Go(func(context.Context) { f() }) == nil
}

// Get returns the runner of job name, or R's zero value.
func (t *Roster[R]) Get(name string) R {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runners[name]
}

// Sorted returns the runners, in name order.
func (t *Roster[R]) Sorted() []R {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sortedLocked()
}

// Names returns the jobs' names, sorted.
func (t *Roster[R]) Names() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.runners))
	for name := range t.runners {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Delete forgets the runner of job name, if any.
func (t *Roster[R]) Delete(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.runners, name)
}

// Detach forgets r, and reports whether it was in the table (another
// runner under its name is left alone).
func (t *Roster[R]) Detach(r R) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	name := t.c.Name(r)
	if cur, ok := t.runners[name]; !ok || cur != r {
		return false
	}
	delete(t.runners, name)
	return true
}

// NoteAwaited marks the jobs that a job added here runs after (Config.
// After): their records are written at every run. It looks at every job:
// a reload that changes a job's parents calls it.
func (t *Roster[R]) NoteAwaited() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.runners {
		t.noteByLocked(r)
	}
}

// noteByLocked marks r's parents added here, and r itself when a job added
// before it runs after it. A name once awaited stays so (as the marks do):
// adding one job costs its own parents, not a look at every job, so that
// adding J jobs is O(J).
func (t *Roster[R]) noteByLocked(r R) {
	for _, p := range t.c.Parents(r) {
		if t.awaited == nil {
			t.awaited = map[string]bool{}
		}
		t.awaited[p] = true
		if pr, ok := t.runners[p]; ok {
			t.c.SetAwaited(pr)
		}
	}
	if t.awaited[t.c.Name(r)] {
		t.c.SetAwaited(r)
	}
}

func (t *Roster[R]) sortedLocked() []R {
	out := make([]R, 0, len(t.runners))
	for _, r := range t.runners {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b R) int { return cmp.Compare(t.c.Name(a), t.c.Name(b)) })
	return out
}
