package health

import (
	"context"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// Checks is the health loop of an instance: it runs the instance's own
// health check every interval, marks the instance offline after Failures
// failures in a row and online again at the first check that passes.
type Checks struct {
	// Every is the interval between checks, and each check's deadline.
	Every time.Duration
	// Check is the application's health check.
	Check func(context.Context) error
	// Failures is how many failed checks in a row mark the instance
	// offline.
	Failures int
	// RC is the registry the offline mark is written in.
	RC regcenter.Center
	// Server is the instance's server id.
	Server string
	// Timeout is the deadline of each write of the offline mark.
	Timeout time.Duration
	// Offline is called once the instance is marked offline, with the
	// check's last error; Online once its mark is removed.
	Offline func(err error)
	Online  func()
	// Log takes the failed checks and marks.
	Log *slog.Logger
}

// Run checks every interval until ctx ends. A mark that fails to be
// written or removed is tried again at the next check that calls for it.
func (c Checks) Run(ctx context.Context) {
	tick := time.NewTicker(c.Every)
	defer tick.Stop()
	failures := 0
	offline := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cctx, cancel := context.WithTimeout(ctx, c.Every)
		err := c.Check(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			failures = 0
			if offline {
				if c.mark(ctx, false) == nil {
					offline = false
					c.Log.Info("health check passes again: the instance is online")
					c.Online()
				}
			}
			continue
		}
		failures++
		c.Log.Warn("health check failed", "failures", failures, "err", err)
		if failures >= c.Failures && !offline {
			if merr := c.mark(ctx, true); merr != nil {
				c.Log.Warn("marking the instance offline", "err", merr)
				continue
			}
			offline = true
			c.Log.Warn("health check failed too many times in a row: the instance is offline and hands its units over", "failures", failures, "err", err)
			c.Offline(err)
		}
	}
}

// mark writes (off) or removes the instance's offline mark.
func (c Checks) mark(ctx context.Context, off bool) error {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	if !off {
		_, err := clearOffline(ctx, c.RC, c.Server)
		return err
	}
	return markOffline(ctx, c.RC, c.Server)
}
