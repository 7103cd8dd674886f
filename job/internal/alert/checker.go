package alert

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// Checker reports the jobs of the index whose last success is older than
// their bound. One instance per namespace runs it (the leader of
// LeaderLatch). A pass lists the index (one read) and reads only the
// entries due by what it last read of them, at most MaxReads a pass: a job
// that keeps succeeding is read about once per bound, so that 10,000 jobs
// cost a handful of reads a pass.
type Checker struct {
	RC  regcenter.Center
	Now func() time.Time
	// Interval is the time between passes (real time).
	Interval time.Duration
	// MaxReads bounds a pass's entry reads; the rest wait for the next.
	MaxReads int
	// Confirm, when set, is asked before a job is reported: whether the
	// job still exists and still has a not-run bound (its config node
	// read). A job removed, or whose bound was taken off, has its entry
	// deleted instead.
	Confirm func(ctx context.Context, job string) (bool, error)
	// Raise is called for each job reported.
	Raise   func(ctx context.Context, r Raised)
	Server  string
	Timeout time.Duration
	Log     *slog.Logger

	mu  sync.Mutex           // one pass at a time: a leadership regained may overlap the last one's end
	due map[string]time.Time // each job's next due time, as last read
}

// DefaultMaxReads is Checker.MaxReads when 0.
const DefaultMaxReads = 500

// Run makes passes until ctx ends.
func (c *Checker) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, c.timeout())
		if err := c.Pass(pctx); err != nil && ctx.Err() == nil {
			c.log().Warn("alert check", "err", err)
		}
		cancel()
		t.Reset(c.Interval)
	}
}

func (c *Checker) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return max(c.Interval, 10*time.Second)
}

func (c *Checker) log() *slog.Logger {
	if c.Log == nil {
		return slog.Default()
	}
	return c.Log
}

// Pass checks the index once.
func (c *Checker) Pass(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	names, err := c.RC.Children(ctx, Jobs)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.due == nil {
		c.due = map[string]time.Time{}
	}
	slices.Sort(names)
	for j := range c.due {
		if _, ok := slices.BinarySearch(names, j); !ok {
			delete(c.due, j)
		}
	}
	now := c.Now()
	limit := c.MaxReads
	if limit <= 0 {
		limit = DefaultMaxReads
	}
	reads := 0
	for _, job := range names {
		if d, ok := c.due[job]; ok && now.Before(d) {
			continue
		}
		if reads >= limit {
			break
		}
		reads++
		due, err := c.check(ctx, job, now)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			c.log().Warn("alert check of a job", "job", job, "err", err)
			continue
		}
		c.due[job] = due
	}
	return nil
}

// check reads job's entry, reports it if due, and returns its next due
// time.
func (c *Checker) check(ctx context.Context, job string, now time.Time) (time.Time, error) {
	for range 3 {
		data, st, err := c.RC.Get(ctx, Entry(job))
		if errors.Is(err, regcenter.ErrNoNode) {
			return now.Add(24 * time.Hour), nil // gone: dropped at the next listing
		}
		if err != nil {
			return time.Time{}, err
		}
		e, err := DecodeEntry(data)
		if err != nil {
			return now.Add(c.Interval), err
		}
		due := e.Due()
		if due.IsZero() || now.Before(due) {
			return due, nil
		}
		if c.Confirm != nil {
			keep, err := c.Confirm(ctx, job)
			if err != nil {
				return time.Time{}, err
			}
			if !keep {
				if err := c.RC.Delete(ctx, Entry(job), st.Version); err != nil && !errors.Is(err, regcenter.ErrNoNode) && !errors.Is(err, regcenter.ErrBadVersion) {
					return time.Time{}, err
				}
				return now.Add(24 * time.Hour), nil
			}
		}
		next := e
		next.Alerted = now.UnixMilli()
		v, _ := json.Marshal(next)
		if _, err := c.RC.Set(ctx, Entry(job), v, st.Version); err != nil {
			if errors.Is(err, regcenter.ErrBadVersion) {
				continue // a success written meanwhile: read again
			}
			return time.Time{}, err
		}
		// The version check made this report the only one for it.
		c.Raise(ctx, Raised{Kind: KindNotRun, Job: job, Fire: e.LastRun(), Bound: time.Duration(e.NotRunFor) * time.Millisecond})
		return next.Due(), nil
	}
	return now, nil
}

// Problem is a job found late or not run by Scan.
type Problem struct {
	Kind Kind
	Job  string
	// Fire is the late fire, or the last success (zero: never ran).
	Fire time.Time
	// Bound is the bound passed.
	Bound time.Duration
}

// Scan reads the whole index once, without the Checker's memory or
// writes (shardjob check): the jobs due now by their entries, and the
// late fires raised within window before now.
func Scan(ctx context.Context, rc regcenter.Center, now time.Time, window time.Duration) ([]Problem, error) {
	names, err := rc.Children(ctx, Jobs)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []Problem
	for _, job := range names {
		data, _, err := rc.Get(ctx, Entry(job))
		if errors.Is(err, regcenter.ErrNoNode) {
			continue
		}
		if err != nil {
			return out, err
		}
		e, err := DecodeEntry(data)
		if err != nil {
			continue
		}
		if due := e.Due(); !due.IsZero() && !now.Before(due) || e.Alerted > 0 && e.Alerted >= max(e.Success, e.Since) {
			out = append(out, Problem{Kind: KindNotRun, Job: job, Fire: e.LastRun(), Bound: time.Duration(e.NotRunFor) * time.Millisecond})
		}
		if e.Late <= 0 {
			continue
		}
		fires, err := rc.Children(ctx, LateDir(job))
		if errors.Is(err, regcenter.ErrNoNode) {
			continue
		}
		if err != nil {
			return out, err
		}
		slices.Sort(fires)
		for _, f := range fires {
			ms, err := strconv.ParseInt(f, 10, 64)
			if err != nil || now.Sub(time.UnixMilli(ms)) > window {
				continue
			}
			out = append(out, Problem{Kind: KindLate, Job: job, Fire: time.UnixMilli(ms), Bound: time.Duration(e.Late) * time.Millisecond})
		}
	}
	return out, nil
}
