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
// to a transaction, then each job arms its watches; a job that exists
// already (another instance made it) registers node by node, without a
// transaction of new trees failing for it first. A bounded number of jobs
// are in flight at once.
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
	fresh := runners[:0:0]
	for _, r := range runners {
		if !existing[s.Name(r)] {
			fresh = append(fresh, r)
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.Register(ctx, r, nil, false); err != nil {
				fail(err)
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
			for _, r := range chunk {
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
