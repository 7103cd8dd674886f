package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/shardjob/shardjob/internal/backfill"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Backfill is a backfill to start: the job's fires from From to To
// (inclusive) run again, as runs of kind "backfill" on each item's owner,
// at no more than Rate fires a second on each instance (0: the default,
// backfill.DefaultRate). By names who starts it.
type Backfill struct {
	From, To time.Time
	Rate     float64
	By       string
}

// BackfillStatus is a job's backfill as the registry holds it.
type BackfillStatus struct {
	Request backfill.Request `json:"request"`
	// State is the request's, or "through" once every item (but disabled
	// ones) ran the range through.
	State string `json:"state"`
	// Fires is the range's fires, Items the job's items; Done counts the
	// runs done (item × fire), Through the items through the range.
	Fires   int `json:"fires"`
	Items   int `json:"items"`
	Done    int `json:"done"`
	Through int `json:"through"`
}

// StateThrough is BackfillStatus.State once every item ran the range.
const StateThrough = "through"

// StartBackfill starts a backfill of job: it checks the request against
// the job's stored config (a monitored job with a schedule; a range that
// has come, holds a fire and at most backfill.MaxFires), refuses while
// another runs (ErrConflict: cancel it first), writes the request over
// the last one, and sets the backfill flag of every server, each of which
// runs its items' fires (one that is down, once it is back). Nothing is
// written when it refuses.
func (a *Admin) StartBackfill(ctx context.Context, jobName string, b Backfill) (backfill.Request, error) {
	cfg, err := a.storedConfig(ctx, jobName)
	if err != nil {
		return backfill.Request{}, err
	}
	if b.Rate == 0 {
		b.Rate = backfill.DefaultRate
	}
	req := backfill.Request{ID: newBackfillID(), From: b.From.UnixMilli(), To: b.To.UnixMilli(), Rate: b.Rate,
		State: backfill.Running, By: b.By, Created: time.Now().UnixMilli()}
	if err := a.checkBackfill(cfg, req); err != nil {
		return backfill.Request{}, err
	}
	paths := layout.Job(jobName)
	cur, ok, version, err := a.readBackfill(ctx, jobName)
	if err != nil {
		return backfill.Request{}, err
	}
	if ok && cur.State == backfill.Running {
		st, err := a.BackfillStatus(ctx, jobName)
		if err != nil {
			return backfill.Request{}, err
		}
		if st.State == backfill.Running {
			return backfill.Request{}, fmt.Errorf("%w: job %q: backfill %s (%s to %s) is running; cancel it first",
				ErrConflict, jobName, cur.ID, cur.FromTime().UTC().Format(time.RFC3339), cur.ToTime().UTC().Format(time.RFC3339))
		}
	}
	if version < 0 {
		_, err = a.rc.Create(ctx, paths.Backfill(), req.Encode(), regcenter.Persistent)
	} else {
		_, err = a.rc.Set(ctx, paths.Backfill(), req.Encode(), version)
	}
	if errors.Is(err, regcenter.ErrNodeExists) || errors.Is(err, regcenter.ErrBadVersion) {
		return backfill.Request{}, fmt.Errorf("%w: job %q: its backfill changed meanwhile", ErrConflict, jobName)
	}
	if err != nil {
		return backfill.Request{}, err
	}
	if err := a.tellServers(ctx, jobName); err != nil {
		return req, fmt.Errorf("backfill %s written, but no instance was told: %w (shardjob backfill --resume tells them)", req.ID, err)
	}
	return req, nil
}

// tellServers sets the backfill flag of every server of job, online or
// not: one that is down runs the backfill when it comes back. A flag
// already set stays.
func (a *Admin) tellServers(ctx context.Context, jobName string) error {
	n, err := backfill.TellServers(ctx, a.rc, layout.Job(jobName), "")
	if err == nil && n == 0 {
		return fmt.Errorf("job %q: no instance has registered it (%w) to backfill", jobName, ErrNotOnline)
	}
	return err
}

// CancelBackfill stops job's backfill: each instance ends it after the
// fire it runs. The progress stays; ResumeBackfill goes on from it.
func (a *Admin) CancelBackfill(ctx context.Context, jobName string) (backfill.Request, error) {
	return a.setBackfillState(ctx, jobName, backfill.Cancelled)
}

// ResumeBackfill resumes job's backfill where its items' progress stands,
// and tells every server (their backfill flag).
func (a *Admin) ResumeBackfill(ctx context.Context, jobName string) (backfill.Request, error) {
	req, err := a.setBackfillState(ctx, jobName, backfill.Running)
	if err != nil {
		return req, err
	}
	if err := a.tellServers(ctx, jobName); err != nil {
		return req, err
	}
	return req, nil
}

func (a *Admin) setBackfillState(ctx context.Context, jobName, state string) (backfill.Request, error) {
	if err := a.requireJob(ctx, jobName); err != nil {
		return backfill.Request{}, err
	}
	req, ok, version, err := a.readBackfill(ctx, jobName)
	if err != nil {
		return backfill.Request{}, err
	}
	if !ok {
		return backfill.Request{}, fmt.Errorf("%w: job %q has no backfill", ErrInvalid, jobName)
	}
	req.State = state
	if _, err := a.rc.Set(ctx, layout.Job(jobName).Backfill(), req.Encode(), version); err != nil {
		if errors.Is(err, regcenter.ErrBadVersion) || errors.Is(err, regcenter.ErrNoNode) {
			return backfill.Request{}, fmt.Errorf("%w: job %q: its backfill changed meanwhile", ErrConflict, jobName)
		}
		return backfill.Request{}, err
	}
	return req, nil
}

// BackfillStatus reads job's backfill and its items' progress.
func (a *Admin) BackfillStatus(ctx context.Context, jobName string) (BackfillStatus, error) {
	cfg, err := a.storedConfig(ctx, jobName)
	if err != nil {
		return BackfillStatus{}, err
	}
	req, ok, _, err := a.readBackfill(ctx, jobName)
	if err != nil {
		return BackfillStatus{}, err
	}
	if !ok {
		return BackfillStatus{}, fmt.Errorf("%w: job %q has no backfill", ErrInvalid, jobName)
	}
	sched, err := scheduleOf(cfg)
	if err != nil {
		return BackfillStatus{}, err
	}
	var fires []int64
	for t := backfill.First(sched, req); !t.IsZero() && !t.After(req.ToTime()) && len(fires) <= backfill.MaxFires; t = sched.Next(t) {
		fires = append(fires, t.UnixMilli())
	}
	st := BackfillStatus{Request: req, State: req.State, Fires: len(fires), Items: cfg.ShardingTotalCount}
	paths := layout.Job(jobName)
	disabled, err := a.disabledItems(ctx, jobName)
	if err != nil {
		return BackfillStatus{}, err
	}
	items := make([]int, st.Items)
	for it := range items {
		items[it] = it
	}
	done := make([]int, st.Items)
	for it, rd := range backfill.ReadProgress(ctx, a.rc, paths, items) {
		if rd.Err != nil {
			return BackfillStatus{}, rd.Err
		}
		if rd.In(req.ID) {
			done[it], _ = slices.BinarySearch(fires, rd.Progress.Through+1)
		}
	}
	live := 0
	for it, n := range done {
		if disabled[it] {
			continue
		}
		live++
		st.Done += n
		if n == len(fires) {
			st.Through++
		}
	}
	if st.Through == live {
		st.State = StateThrough
	}
	return st, nil
}

// checkBackfill refuses a request cfg cannot run.
func (a *Admin) checkBackfill(cfg Config, req backfill.Request) error {
	if cfg.Unmonitored {
		return fmt.Errorf("%w: job %q is unmonitored: a backfill writes each run's progress with its completion", ErrInvalid, cfg.Name)
	}
	sched, err := scheduleOf(cfg)
	if err != nil {
		return err
	}
	if err := req.Check(time.Now()); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if _, err := req.Fires(sched); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// scheduleFunc is a config's Next as a backfill reads a schedule.
type scheduleFunc func(time.Time) time.Time

func (f scheduleFunc) Next(t time.Time) time.Time { return f(t) }

// scheduleOf is cfg's schedule; an error when it has none that parses.
func scheduleOf(cfg Config) (backfill.Schedule, error) {
	if cfg.Next == nil {
		return nil, fmt.Errorf("%w: job %q has no schedule that parses", ErrInvalid, cfg.Name)
	}
	return scheduleFunc(cfg.Next), nil
}

// storedConfig reads and decodes job's stored config.
func (a *Admin) storedConfig(ctx context.Context, jobName string) (Config, error) {
	if err := a.requireJob(ctx, jobName); err != nil {
		return Config{}, err
	}
	data, ok, err := a.get(ctx, layout.Job(jobName).Config())
	if err != nil {
		return Config{}, err
	}
	if !ok {
		return Config{}, fmt.Errorf("%w %q: it has no config node (it is being removed)", ErrUnknownJob, jobName)
	}
	cfg, err := a.decode(ctx, data)
	if err != nil {
		return Config{}, fmt.Errorf("%w: the stored config of job %q does not decode: %w", ErrInvalid, jobName, err)
	}
	return cfg, nil
}

// readBackfill reads job's backfill request and its node's version (-1:
// no node). A request that does not decode is read as none: a new request
// is written over it, and there is none to resume.
func (a *Admin) readBackfill(ctx context.Context, jobName string) (backfill.Request, bool, int32, error) {
	return backfill.ReadRequest(ctx, a.rc, layout.Job(jobName), nil)
}

// disabledItems reads job's disabled items.
func (a *Admin) disabledItems(ctx context.Context, jobName string) (map[int]bool, error) {
	data, ok, err := a.get(ctx, layout.Job(jobName).DisabledItems())
	if err != nil || !ok {
		return nil, err
	}
	its, err := layout.ParseItems(string(data))
	if err != nil {
		return nil, nil // the instances ignore garbage too
	}
	out := map[int]bool{}
	for _, it := range its {
		out[it] = true
	}
	return out, nil
}

// newBackfillID returns a fresh request id.
func newBackfillID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail
	return strconv.FormatInt(time.Now().Unix(), 36) + "-" + hex.EncodeToString(b[:])
}
