package admin

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	"github.com/shardjob/shardjob/job"
)

// maxCachedConfigs and maxCachedBytes bound the decoded configs an Admin
// keeps, by number and by the size of their documents (a decoded config
// is no larger than its document); past either the cache starts afresh.
const (
	maxCachedConfigs = 10_000
	maxCachedBytes   = 32 << 20
)

// noFireRecheck is how long a search that found no fire within its horizon
// stands before it is made again.
const noFireRecheck = time.Hour

// cachedConfig is a job's config node decoded once per document, and the
// last next fire computed from it: reading an unchanged job (GET /jobs,
// which the console polls every second) costs a map lookup, not a decode
// and a schedule search per job per request.
type cachedConfig struct {
	sum  [sha256.Size]byte // of the document decoded
	size int               // the document's length
	cfg  Config            // without Document, which reads do not need
	err  error

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
	sum := sha256.Sum256(data)
	a.configsMu.Lock()
	e := a.configs[jobName]
	a.configsMu.Unlock()
	if e != nil && e.sum == sum {
		return e.cfg, e.err
	}
	cfg, err := a.decode(ctx, data)
	if err != nil && ctx.Err() != nil {
		return cfg, err // abandoned, not an answer to keep
	}
	cfg.Document = nil
	e = &cachedConfig{sum: sum, size: len(data), err: err}
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
	if old := a.configs[jobName]; old != nil {
		a.configsBytes -= old.size
	}
	if a.configs == nil || len(a.configs) >= maxCachedConfigs || a.configsBytes+e.size > maxCachedBytes {
		a.configs, a.configsBytes = map[string]*cachedConfig{}, 0
	}
	a.configs[jobName] = e
	a.configsBytes += e.size
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
