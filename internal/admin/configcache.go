package admin

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/shardjob/shardjob/job"
)

// maxCachedConfigs bounds the decoded configs an Admin keeps; past it the
// cache starts afresh.
const maxCachedConfigs = 10_000

// noFireRecheck is how long a search that found no fire within its horizon
// stands before it is made again.
const noFireRecheck = time.Hour

// cachedConfig is a job's config node decoded once per document, and the
// last next fire computed from it: reading an unchanged job (GET /jobs,
// which the console polls every second) costs a map lookup, not a decode
// and a schedule search per job per request.
type cachedConfig struct {
	doc string
	cfg Config
	err error

	mu      sync.Mutex
	from    time.Time // the time the next fire was computed after
	next    time.Time // the next fire after from (zero: none)
	nextErr error
	known   bool
}

// decodeCached decodes job's config node data as decode does, once per
// document: the decoded config is kept until the node changes. The config's
// Next and NextFire answer from the last search while it stands: the next
// fire after from is the next fire after any time before it.
func (a *Admin) decodeCached(ctx context.Context, jobName string, data []byte) (Config, error) {
	a.configsMu.Lock()
	e := a.configs[jobName]
	a.configsMu.Unlock()
	if e != nil && e.doc == string(data) {
		return e.cfg, e.err
	}
	cfg, err := a.decode(ctx, data)
	if err != nil && ctx.Err() != nil {
		return cfg, err // abandoned, not an answer to keep
	}
	e = &cachedConfig{doc: string(data), err: err}
	if err == nil {
		if next := cfg.NextFire; next != nil {
			cfg.NextFire = func(t time.Time) (time.Time, error) { return e.nextFire(next, t) }
			cfg.Next = func(t time.Time) time.Time {
				n, _ := e.nextFire(next, t)
				return n
			}
		}
	}
	e.cfg = cfg
	a.configsMu.Lock()
	if a.configs == nil || len(a.configs) >= maxCachedConfigs {
		a.configs = map[string]*cachedConfig{}
	}
	a.configs[jobName] = e
	a.configsMu.Unlock()
	return cfg, err
}

// nextFire answers next(t) from the last answer while it stands: for t in
// [from, next), or for every t from on once the schedule has ended, or for
// an hour after a search that found no fire within its horizon.
func (e *cachedConfig) nextFire(next func(time.Time) (time.Time, error), t time.Time) (time.Time, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.known && !t.Before(e.from) {
		switch {
		case e.nextErr == nil && t.Before(e.next):
			return e.next, nil
		case errors.Is(e.nextErr, job.ErrScheduleEnded):
			return time.Time{}, e.nextErr
		case e.nextErr != nil && t.Before(e.from.Add(noFireRecheck)):
			return time.Time{}, e.nextErr
		}
	}
	e.from, e.known = t, true
	e.next, e.nextErr = next(t)
	return e.next, e.nextErr
}
