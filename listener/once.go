package listener

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// Errors of distribute-once hooks.
var (
	// ErrDistributeTimeout means a distribute-once wait expired: not every
	// item of the fire started (before) or completed (after) in time —
	// typically an instance died mid-fire. The error says how many did.
	ErrDistributeTimeout = errors.New("listener: distribute-once wait timed out")
	// ErrHookFailed means a distribute-once hook returned an error (on
	// whichever instance ran it).
	ErrHookFailed = errors.New("listener: distribute-once hook failed")
)

// DefaultDistributeTimeout bounds each wait of a Guarantee when its timeout
// is 0.
const DefaultDistributeTimeout = time.Minute

// Guarantee runs a DistributeOnce's hooks once per fire across the
// cluster, coordinated in the registry under /{job}/guarantee/{fire in unix
// ms}:
//
//   - Before an item runs, its instance creates started/{item}. The
//     instance that sees every item started creates the node before and
//     runs BeforeFire; every item waits until before says done.
//   - After an item ran, its instance creates completed/{item}. The
//     instance that sees every item completed creates after and runs
//     AfterFire; every item waits until after says done.
//
// Creating before (and after) decides who runs the hook: exactly one
// instance succeeds. Every wait is bounded by the timeout and by the
// item's context and ends with ErrDistributeTimeout, never hangs: an
// instance that died mid-fire leaves its items unstarted or uncompleted,
// and the others learn so when their wait expires. A make-up run (misfire,
// failover) of an item belongs to the fire of its FireTime and completes
// it late. When a later fire's before hook runs, the trees of fires whose
// after hook ran are removed, and those of fires older than ten timeouts.
//
// Unlike ElasticJob's AbstractDistributeOnceElasticJobListener, whose
// waits have no bound when the timeout is left out, every wait here ends.
type Guarantee struct {
	rc      regcenter.Center
	job     string
	hooks   DistributeOnce
	timeout time.Duration
	log     *slog.Logger
}

// NewGuarantee returns the guarantee of job's hooks on rc (the job's
// registry center: the same namespace). timeout bounds each wait and each
// hook; 0 means DefaultDistributeTimeout.
func NewGuarantee(rc regcenter.Center, job string, hooks DistributeOnce, timeout time.Duration, log *slog.Logger) (*Guarantee, error) {
	switch {
	case rc == nil || hooks == nil:
		return nil, errors.New("listener: a guarantee needs a registry center and hooks")
	case job == "" || strings.ContainsAny(job, "/"):
		return nil, fmt.Errorf("listener: job name %q", job)
	case timeout < 0:
		return nil, fmt.Errorf("listener: distribute-once timeout %v must not be negative", timeout)
	}
	if timeout == 0 {
		timeout = DefaultDistributeTimeout
	}
	if log == nil {
		log = slog.Default()
	}
	return &Guarantee{rc: rc, job: job, hooks: hooks, timeout: timeout, log: log}, nil
}

// Item is the execution Run gates.
type Item struct {
	// Fire is the item's fire: Job, TaskID, FireTime, Kind, ServerID (the
	// executing instance). Items is filled in by Run.
	Fire Fire
	// Item is the item; Total the job's item count.
	Item, Total int
}

// Run gates one item's execution: it waits for the fire's before hook
// (running it here if this item is the last of the fire to start), calls
// run, then waits for the after hook (running it here if this item is the
// last to complete). A wait that expires, or a hook that failed, is an
// error; when the before wait fails, run is not called.
func (g *Guarantee) Run(ctx context.Context, it Item, run func(context.Context) error) error {
	dir := "/" + g.job + "/guarantee/" + strconv.FormatInt(it.Fire.FireTime.UnixMilli(), 10)
	f := it.Fire
	f.Items = make([]int, it.Total)
	for i := range f.Items {
		f.Items[i] = i
	}
	if err := g.phase(ctx, dir, "started", "before", it, f, g.hooks.BeforeFire); err != nil {
		return err
	}
	err := run(ctx)
	if perr := g.phase(ctx, dir, "completed", "after", it, f, g.hooks.AfterFire); perr != nil {
		return errors.Join(err, perr)
	}
	return err
}

const (
	hookRunning = "running"
	hookDone    = "done"
	hookFailed  = "failed: "
)

// phase marks it in dir/marks, runs hook under dir/gate if every item is
// marked and no one else has, and waits until the gate says the hook ran.
func (g *Guarantee) phase(ctx context.Context, dir, marks, gate string, it Item, f Fire, hook func(context.Context, Fire) error) error {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	marksPath, gatePath := dir+"/"+marks, dir+"/"+gate
	poke := make(chan struct{}, 1)
	wake := func(regcenter.Event) {
		select {
		case poke <- struct{}{}:
		default:
		}
	}
	stopMarks := g.rc.Watch(marksPath, regcenter.WatchChildren, wake)
	defer stopMarks()
	stopGate := g.rc.Watch(gatePath, regcenter.WatchNode, wake)
	defer stopGate()

	if _, err := g.rc.Create(ctx, marksPath+"/"+strconv.Itoa(it.Item), nil, regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return fmt.Errorf("listener: %s of %s: marking item %d: %w", gate, it.Fire.TaskID, it.Item, err)
	}
	seen := 0
	for {
		data, _, err := g.rc.Get(ctx, gatePath)
		switch {
		case err == nil && string(data) == hookDone:
			return nil
		case err == nil && strings.HasPrefix(string(data), hookFailed):
			return fmt.Errorf("%w: %s hook of %s: %s", ErrHookFailed, gate, it.Fire.TaskID, strings.TrimPrefix(string(data), hookFailed))
		case err != nil && !errors.Is(err, regcenter.ErrNoNode):
			if ctx.Err() != nil {
				return g.expired(ctx, gate, it, seen)
			}
			return fmt.Errorf("listener: %s of %s: %w", gate, it.Fire.TaskID, err)
		case errors.Is(err, regcenter.ErrNoNode):
			kids, err := g.rc.Children(ctx, marksPath)
			if err != nil && ctx.Err() != nil {
				return g.expired(ctx, gate, it, seen)
			}
			if err != nil {
				return fmt.Errorf("listener: %s of %s: %w", gate, it.Fire.TaskID, err)
			}
			seen = countItems(kids, it.Total)
			if seen == it.Total {
				won, err := g.runHook(ctx, dir, gatePath, gate, f, hook)
				if err != nil || won {
					return err
				}
				continue // another instance runs it: wait for its result
			}
		}
		select {
		case <-poke:
		case <-ctx.Done():
			return g.expired(ctx, gate, it, seen)
		}
	}
}

// runHook creates the gate and, if that succeeded, runs the hook and
// records how it went. won says this instance ran it.
func (g *Guarantee) runHook(ctx context.Context, dir, gatePath, gate string, f Fire, hook func(context.Context, Fire) error) (won bool, err error) {
	if _, err := g.rc.Create(ctx, gatePath, []byte(hookRunning), regcenter.Persistent); errors.Is(err, regcenter.ErrNodeExists) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("listener: %s of %s: %w", gate, f.TaskID, err)
	}
	if gate == "before" {
		g.sweep(ctx, dir)
	}
	herr := hook(ctx, f)
	result := hookDone
	if herr != nil {
		result = hookFailed + oneLine(herr.Error())
	}
	// Recorded even when ctx has ended, so the others stop waiting: the
	// write has a bound of its own.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.timeout)
	defer cancel()
	if _, err := g.rc.Set(wctx, gatePath, []byte(result), -1); err != nil {
		return true, errors.Join(herr, fmt.Errorf("listener: recording the %s hook of %s: %w", gate, f.TaskID, err))
	}
	if herr != nil {
		return true, fmt.Errorf("%w: %s hook of %s: %w", ErrHookFailed, gate, f.TaskID, herr)
	}
	g.log.Debug("distribute-once hook ran", "job", g.job, "task", f.TaskID, "hook", gate)
	return true, nil
}

// sweep removes the trees of earlier fires whose after hook ran.
func (g *Guarantee) sweep(ctx context.Context, dir string) {
	parent := dir[:strings.LastIndexByte(dir, '/')]
	cur, _ := strconv.ParseInt(dir[len(parent)+1:], 10, 64)
	kids, err := g.rc.Children(ctx, parent)
	if err != nil {
		g.log.Warn("listing distribute-once fires", "job", g.job, "err", err)
		return
	}
	for _, k := range kids {
		ms, err := strconv.ParseInt(k, 10, 64)
		if err != nil || ms >= cur {
			continue
		}
		data, _, err := g.rc.Get(ctx, parent+"/"+k+"/after")
		stale := ms < cur-10*g.timeout.Milliseconds()
		if !stale && (err != nil || string(data) == hookRunning) {
			continue // unfinished: left for its late items, for a while
		}
		if err := g.rc.DeleteTree(ctx, parent+"/"+k); err != nil {
			g.log.Warn("removing a finished fire's distribute-once nodes", "job", g.job, "fire", k, "err", err)
		}
	}
}

func (g *Guarantee) expired(ctx context.Context, gate string, it Item, seen int) error {
	what := map[string]string{"before": "started", "after": "completed"}[gate]
	if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
		return fmt.Errorf("listener: waiting for the %s hook of %s: %w", gate, it.Fire.TaskID, cause)
	}
	return fmt.Errorf("%w: %s hook of %s: %d of %d items %s within %v", ErrDistributeTimeout, gate, it.Fire.TaskID, seen, it.Total, what, g.timeout)
}

func countItems(kids []string, total int) int {
	n := 0
	for _, k := range kids {
		if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < total {
			n++
		}
	}
	return n
}

func oneLine(s string) string {
	s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}
