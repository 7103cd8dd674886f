package fleet

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/shardjob/shardjob/regcenter"
)

// Starter starts many jobs at once: the new jobs' trees are made several
// to a transaction, then each job arms its watches; the jobs that exist
// already (another instance made them, before or while this start made
// its trees) are joined several to a read and a transaction, and one
// that cannot join so registers node by node. A bounded
// number of jobs are in flight at once.
type Starter[R comparable] struct {
	// InFlight is how many jobs register at once (a batch of new jobs'
	// trees counting as one).
	InFlight int
	// PerTxn is how many new jobs' trees one transaction makes.
	PerTxn int
	// Name is the name of the job r runs.
	Name func(r R) string
	// Create makes the trees of batch's jobs, trying again as its caller
	// sees fit, and returns the session it made them under and which of
	// them it made (the others existed).
	Create func(ctx context.Context, batch []R) (*regcenter.Session, map[R]bool, error)
	// Join joins this instance to batch's jobs, which exist already,
	// several to a transaction, and returns the rest of the start of each
	// job it joined; a job it did not join registers by Register, as one
	// that exists (nil: every such job does).
	Join func(ctx context.Context, batch []R) map[R]func(ctx context.Context) error
	// Register finishes r's start: under sess when its tree was made (made
	// says whether by this start), under the session of the moment when
	// sess is nil.
	Register func(ctx context.Context, r R, sess *regcenter.Session, made bool) error
}

// Start starts runners, those named in existing (see Existing) as jobs
// that exist already, and returns every failure joined.
func (s Starter[R]) Start(ctx context.Context, runners []R, existing map[string]bool) error {
	var (
		errs []error
		emu  sync.Mutex
		wg   sync.WaitGroup
		sem  = make(chan struct{}, s.InFlight)
	)
	fail := func(err error) {
		emu.Lock()
		errs = append(errs, err)
		emu.Unlock()
	}
	// start runs one job's start on a goroutine of its own, one of those
	// in flight.
	start := func(f func(ctx context.Context) error) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(ctx); err != nil {
				fail(err)
			}
		}()
	}
	register := func(r R) func(ctx context.Context) error {
		return func(ctx context.Context) error { return s.Register(ctx, r, nil, false) }
	}
	var fresh, old []R
	for _, r := range runners {
		if existing[s.Name(r)] {
			old = append(old, r)
		} else {
			fresh = append(fresh, r)
		}
	}
	if s.Join == nil {
		for _, r := range old {
			start(register(r))
		}
		old = nil
	}
	for chunk := range slices.Chunk(old, s.PerTxn) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			joined := s.Join(ctx, chunk)
			<-sem
			for _, r := range chunk {
				if f := joined[r]; f != nil {
					start(f)
				} else {
					start(register(r))
				}
			}
		}()
	}
	for chunk := range slices.Chunk(fresh, s.PerTxn) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, made, err := s.Create(ctx, chunk)
			<-sem
			if err != nil {
				fail(err)
				return
			}
			// Those another instance made meanwhile (a fleet starting
			// at once) join in a batch too.
			var joined map[R]func(ctx context.Context) error
			if others := slices.DeleteFunc(slices.Clone(chunk), func(r R) bool { return made[r] }); len(others) > 0 && s.Join != nil {
				sem <- struct{}{}
				joined = s.Join(ctx, others)
				<-sem
			}
			for _, r := range chunk {
				if f := joined[r]; f != nil {
					start(f)
					continue
				}
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					if err := s.Register(ctx, r, sess, made[r]); err != nil {
						fail(err)
					}
				}()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Existing returns which of n jobs exist in the registry, from one read of
// the namespace's children; none when there is one job (its transaction
// says as much) or the read fails (the transactions of new trees then find
// them, one failed transaction each).
func Existing(ctx context.Context, rc regcenter.Center, n int, log *slog.Logger) map[string]bool {
	if n < 2 {
		return nil
	}
	names, err := rc.Children(ctx, "/")
	if err != nil {
		log.Debug("listing the namespace's jobs before registering", "err", err)
		return nil
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}
