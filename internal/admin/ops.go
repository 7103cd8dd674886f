package admin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardjob/shardjob/internal/jobhook"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Change is the outcome of an operation on one server of one job.
type Change struct {
	Job    string `json:"job"`
	Server string `json:"server,omitempty"`
	// Changed is false when nothing had to be written: the flag was already
	// in the requested state (or a trigger was already pending).
	Changed bool `json:"changed"`
}

// targets resolves an operation on server in job ("" for every job where
// server is registered) to the jobs to act on, checking that server is
// registered (ErrUnknownServer) and, with needOnline, online there
// (ErrNotOnline).
func (a *Admin) targets(ctx context.Context, server, job string, needOnline bool) ([]string, error) {
	if err := checkName("server", server); err != nil {
		return nil, err
	}
	var jobs []string
	if job != "" {
		if err := a.requireJob(ctx, job); err != nil {
			return nil, err
		}
		jobs = []string{job}
	} else {
		var err error
		if jobs, err = a.jobNames(ctx); err != nil {
			return nil, err
		}
	}
	registered := make([]bool, len(jobs))
	online := make([]bool, len(jobs))
	err := eachErr(len(jobs), 16, func(i int) error {
		paths := layout.Job(jobs[i])
		var err error
		if registered[i], _, err = a.rc.Exists(ctx, paths.Server(server)); err != nil || !registered[i] {
			return err
		}
		online[i], _, err = a.rc.Exists(ctx, paths.Flag(server, layout.Status))
		return err
	})
	if err != nil {
		return nil, err
	}
	var reg, on []string
	for i, j := range jobs {
		if registered[i] {
			reg = append(reg, j)
		}
		if online[i] {
			on = append(on, j)
		}
	}
	switch {
	case len(reg) == 0 && job != "":
		ids, _ := a.children(ctx, layout.Job(job).Servers())
		slices.Sort(ids)
		known := "none"
		if len(ids) > 0 {
			known = strings.Join(ids, ", ")
		}
		return nil, fmt.Errorf("%w %q in job %q (its servers: %s)", ErrUnknownServer, server, job, known)
	case len(reg) == 0:
		where := "any job"
		if ns := a.Namespace(); ns != "" {
			where += " of namespace " + ns
		}
		return nil, fmt.Errorf("%w %q: not registered in %s", ErrUnknownServer, server, where)
	case needOnline && len(on) == 0 && job != "":
		return nil, fmt.Errorf("server %q is %w in job %q (its instance is not running)", server, ErrNotOnline, job)
	case needOnline && len(on) == 0:
		return nil, fmt.Errorf("server %q is %w in any job (its instances are not running)", server, ErrNotOnline)
	case needOnline:
		return on, nil
	}
	return reg, nil
}

// setFlag creates server's flag in job; with reshard, the necessary flag is
// created in the same transaction. It reports whether the flag was new.
func (a *Admin) setFlag(ctx context.Context, job, server, flag string, reshard bool) (bool, error) {
	paths := layout.Job(job)
	ops := []regcenter.Op{regcenter.CreateOp{Path: paths.Flag(server, flag), Mode: regcenter.Persistent}}
	if reshard {
		ops = append(ops, paths.FlagReshardOps()...)
	}
	return a.flagTxn(ctx, job, server, ops)
}

// clearFlag deletes server's flag in job; with reshard, the necessary flag
// is created in the same transaction. It reports whether the flag was set.
func (a *Admin) clearFlag(ctx context.Context, job, server, flag string, reshard bool) (bool, error) {
	paths := layout.Job(job)
	ops := []regcenter.Op{regcenter.DeleteOp{Path: paths.Flag(server, flag), Version: -1}}
	if reshard {
		ops = append(ops, paths.FlagReshardOps()...)
	}
	return a.flagTxn(ctx, job, server, ops)
}

func (a *Admin) flagTxn(ctx context.Context, job, server string, ops []regcenter.Op) (bool, error) {
	_, creating := ops[0].(regcenter.CreateOp)
	for range 3 {
		err := a.rc.Multi(ctx, ops...)
		var me *regcenter.MultiError
		switch {
		case err == nil:
			return true, nil
		case !errors.As(err, &me):
			return false, err
		case me.Index == 0 && creating && errors.Is(me.Err, regcenter.ErrNodeExists):
			return false, nil // already set
		case me.Index == 0 && creating && errors.Is(me.Err, regcenter.ErrNoNode):
			return false, fmt.Errorf("%w %q in job %q (its node went away)", ErrUnknownServer, server, job)
		case me.Index == 0 && !creating && errors.Is(me.Err, regcenter.ErrNoNode):
			return false, nil // already clear
		case me.Index == 1 && errors.Is(me.Err, regcenter.ErrNodeExists):
			ops = ops[:1] // a reshard is already due
		case me.Index == 1 && errors.Is(me.Err, regcenter.ErrNoNode):
			ops = ops[:1] // no instance ever registered: nothing to reshard
		default:
			return false, err
		}
	}
	return false, fmt.Errorf("%w: job %q, server %q: flags kept changing", ErrConflict, job, server)
}

func (a *Admin) flagAll(ctx context.Context, server, job, flag string, set, reshard, needOnline bool) ([]Change, error) {
	jobs, err := a.targets(ctx, server, job, needOnline)
	if err != nil {
		return nil, err
	}
	out := make([]Change, len(jobs))
	err = eachErr(len(jobs), 16, func(i int) error {
		var changed bool
		var err error
		if set {
			changed, err = a.setFlag(ctx, jobs[i], server, flag, reshard)
		} else {
			changed, err = a.clearFlag(ctx, jobs[i], server, flag, reshard)
		}
		out[i] = Change{Job: jobs[i], Server: server, Changed: changed}
		if err != nil {
			return fmt.Errorf("job %q: %w", jobs[i], err)
		}
		return nil
	})
	return out, err
}

// Disable makes server take no items of job, or of every job where it is
// registered when job is "". The disabled flag survives restarts; the
// job's leader reshards at the next fire (a reshard is requested in the
// same transaction as the flag).
func (a *Admin) Disable(ctx context.Context, server, job string) ([]Change, error) {
	return a.flagAll(ctx, server, job, layout.Disabled, true, true, false)
}

// Enable undoes Disable: server takes items again from the next fire.
func (a *Admin) Enable(ctx context.Context, server, job string) ([]Change, error) {
	return a.flagAll(ctx, server, job, layout.Disabled, false, true, false)
}

// Pause stops server firing job (every job where it is registered when job
// is ""). Its items stay assigned to it and do not run elsewhere until
// Resume.
func (a *Admin) Pause(ctx context.Context, server, job string) ([]Change, error) {
	return a.flagAll(ctx, server, job, layout.Paused, true, false, false)
}

// Resume undoes Pause.
func (a *Admin) Resume(ctx context.Context, server, job string) ([]Change, error) {
	return a.flagAll(ctx, server, job, layout.Paused, false, false, false)
}

// Shutdown makes the instance registered as server leave job (every job
// where it is online when job is ""), cleanly, as Scheduler.Shutdown does
// for one job: running items finish, its nodes go, and the others take its
// items at their next fire. The flag is cleared when that instance starts
// the job again. The server must be online (ErrNotOnline). See
// WaitOffline to wait for it to leave.
func (a *Admin) Shutdown(ctx context.Context, server, job string) ([]Change, error) {
	return a.flagAll(ctx, server, job, layout.Shutdown, true, false, true)
}

// Trigger runs job once now, outside its schedule: on server alone, or,
// when server is "", on every server online in the job — one transaction
// creates the trigger flag of each and checks that each is still online.
// A server whose items are running runs them again once they finish. A
// trigger already pending on a server is reported with Changed false.
func (a *Admin) Trigger(ctx context.Context, job, server string) ([]Change, error) {
	if err := a.requireJob(ctx, job); err != nil {
		return nil, err
	}
	return a.flagOnline(ctx, job, server, layout.Trigger, "trigger")
}

// flagOnline creates flag on server alone, or, when server is "", on every
// server online in job, in one transaction that checks each is still
// online; a flag already there is reported with Changed false. what names
// the operation in errors.
func (a *Admin) flagOnline(ctx context.Context, job, server, flag, what string) ([]Change, error) {
	paths := layout.Job(job)
	var targets []string
	if server != "" {
		if _, err := a.targets(ctx, server, job, true); err != nil {
			return nil, err
		}
		targets = []string{server}
	} else {
		ids, err := a.children(ctx, paths.Servers())
		if err != nil {
			return nil, err
		}
		slices.Sort(ids)
		online := make([]bool, len(ids))
		if err := eachErr(len(ids), 16, func(i int) error {
			var err error
			online[i], _, err = a.rc.Exists(ctx, paths.Flag(ids[i], layout.Status))
			return err
		}); err != nil {
			return nil, err
		}
		for i, id := range ids {
			if online[i] {
				targets = append(targets, id)
			}
		}
		if len(targets) == 0 {
			return nil, fmt.Errorf("job %q: no instance is online (%w) to %s", job, ErrNotOnline, what)
		}
	}
	pending := map[string]bool{}
	gone := map[string]bool{}
	for attempt := 0; attempt <= len(targets)+1; attempt++ {
		var ops []regcenter.Op
		var owners []string // the server of each op
		for _, sv := range targets {
			if pending[sv] || gone[sv] {
				continue
			}
			ops = append(ops,
				regcenter.CheckOp{Path: paths.Flag(sv, layout.Status), Version: -1},
				regcenter.CreateOp{Path: paths.Flag(sv, flag), Mode: regcenter.Persistent})
			owners = append(owners, sv, sv)
		}
		var err error
		if len(ops) > 0 {
			err = a.rc.Multi(ctx, ops...)
		}
		var me *regcenter.MultiError
		switch {
		case err == nil:
			var out []Change
			for _, sv := range targets {
				if !gone[sv] {
					out = append(out, Change{Job: job, Server: sv, Changed: !pending[sv]})
				}
			}
			if len(out) == 0 {
				return nil, fmt.Errorf("job %q: no instance is online (%w) to %s", job, ErrNotOnline, what)
			}
			return out, nil
		case !errors.As(err, &me):
			return nil, err
		case me.Index%2 == 0 && errors.Is(me.Err, regcenter.ErrNoNode):
			if server != "" {
				return nil, fmt.Errorf("server %q is %w in job %q (it left meanwhile)", server, ErrNotOnline, job)
			}
			gone[owners[me.Index]] = true
		case me.Index%2 == 1 && errors.Is(me.Err, regcenter.ErrNodeExists):
			pending[owners[me.Index]] = true
		default:
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: job %q: servers kept changing while setting the %s flag", ErrConflict, job, flag)
}

// WaitOffline waits up to wait until server's status node is gone from
// every job of jobs (the instance left them). It fails with ErrStillOnline
// when the time is up.
func (a *Admin) WaitOffline(ctx context.Context, server string, jobs []string, wait time.Duration) error {
	var left []string
	err := a.waitUntil(ctx, wait, func(ctx context.Context) (bool, []string, error) {
		left = left[:0]
		var watch []string
		for _, j := range jobs {
			paths := layout.Job(j)
			ok, _, err := a.rc.Exists(ctx, paths.Flag(server, layout.Status))
			if err != nil {
				return false, nil, err
			}
			if ok {
				left = append(left, j)
				watch = append(watch, paths.Server(server))
			}
		}
		return len(left) == 0, watch, nil
	})
	if errors.Is(err, errTimeUp) {
		return fmt.Errorf("%w: server %q is still online in %s after %v", ErrStillOnline, server, strings.Join(left, ", "), wait)
	}
	return err
}

var errTimeUp = errors.New("time is up")

// waitUntil re-runs check whenever the children of a path it names change
// (and at least every second), until it reports done (nil), wait has
// passed (errTimeUp) or ctx ends.
func (a *Admin) waitUntil(ctx context.Context, wait time.Duration, check func(ctx context.Context) (done bool, watch []string, err error)) error {
	deadline := time.NewTimer(max(wait, 0))
	defer deadline.Stop()
	wake := make(chan struct{}, 1)
	watches := map[string]func(){}
	defer func() {
		for _, c := range watches {
			c()
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		done, paths, err := check(ctx)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		for _, p := range paths {
			if _, ok := watches[p]; !ok {
				watches[p] = a.rc.Watch(p, regcenter.WatchChildren, func(regcenter.Event) {
					select {
					case wake <- struct{}{}:
					default:
					}
				})
			}
		}
		select {
		case <-wake:
		case <-tick.C:
		case <-deadline.C:
			return errTimeUp
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Removal reports what Remove did.
type Removal struct {
	Job string `json:"job"`
	// Stopped lists the servers that were online when the config was
	// deleted; each has left the job.
	Stopped []string `json:"stopped"`
}

// Remove removes job from the cluster: it deletes the config node, which
// makes every instance stop the job and leave; waits up to wait until no
// server's status node remains (and no election candidate); then deletes
// the job's whole tree. If instances are still online after wait it fails
// with ErrStillOnline, leaving the nodes (without the config) in place:
// call it again to finish. A job that others run after (Dependents) is
// refused with ErrHasDependents, changing nothing, unless force.
func (a *Admin) Remove(ctx context.Context, job string, wait time.Duration, force bool) (Removal, error) {
	if err := a.requireJob(ctx, job); err != nil {
		return Removal{}, err
	}
	if !force {
		deps, err := a.Dependents(ctx, job)
		if err != nil {
			return Removal{}, err
		}
		if len(deps) > 0 {
			return Removal{}, fmt.Errorf("job %q: %w: %s; without it every fire of theirs is skipped (remove them first, change their after:, or force the removal)",
				job, ErrHasDependents, strings.Join(deps, ", "))
		}
	}
	paths := layout.Job(job)
	online, err := a.onlineServers(ctx, job)
	if err != nil {
		return Removal{}, err
	}
	res := Removal{Job: job, Stopped: online}
	if res.Stopped == nil {
		res.Stopped = []string{}
	}
	if err := a.rc.Delete(ctx, paths.Config(), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return res, fmt.Errorf("job %q: delete config: %w", job, err)
	}
	var still []string
	err = a.waitUntil(ctx, wait, func(ctx context.Context) (bool, []string, error) {
		ids, err := a.children(ctx, paths.Servers())
		if err != nil {
			return false, nil, err
		}
		slices.Sort(ids)
		watch := []string{paths.Servers(), paths.ElectionLatch()}
		still = still[:0]
		for _, id := range ids {
			ok, _, err := a.rc.Exists(ctx, paths.Flag(id, layout.Status))
			if err != nil {
				return false, nil, err
			}
			if ok {
				still = append(still, id)
				watch = append(watch, paths.Server(id))
			}
		}
		candidates, err := a.children(ctx, paths.ElectionLatch())
		if err != nil {
			return false, nil, err
		}
		return len(still) == 0 && len(candidates) == 0, watch, nil
	})
	if err != nil {
		if errors.Is(err, errTimeUp) {
			who := "election candidates remain"
			if len(still) > 0 {
				who = strings.Join(still, ", ") + " still online"
			}
			return res, fmt.Errorf("%w: job %q: %s after %v; its config is deleted, so they are leaving: run remove again to finish", ErrStillOnline, job, who, wait)
		}
		return res, err
	}
	// An instance that was just leaving may still write a node or two:
	// delete until the tree stays gone.
	for range 5 {
		if err := a.rc.DeleteTree(ctx, paths.Root()); err != nil {
			return res, fmt.Errorf("job %q: delete nodes: %w", job, err)
		}
		ok, _, err := a.rc.Exists(ctx, paths.Root())
		if err != nil {
			return res, err
		}
		if !ok {
			// Its entry in the index of definitions, if it was defined
			// at run time (jobfile.Define counts definitions there).
			if err := a.rc.Delete(ctx, layout.DefinitionEntry(job), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
				return res, fmt.Errorf("job %q: delete its entry among the definitions: %w", job, err)
			}
			if _, err := jobhook.ReleaseUnits(ctx, a.rc, job); err != nil {
				return res, fmt.Errorf("job %q: %w", job, err)
			}
			return res, nil
		}
	}
	return res, fmt.Errorf("%w: job %q: nodes keep reappearing under %s", ErrConflict, job, paths.Root())
}

// Dependents returns the jobs of the namespace whose stored config runs
// after job (names it in after:), sorted. A config that does not decode
// is skipped: it names no parent any instance acts on.
func (a *Admin) Dependents(ctx context.Context, job string) ([]string, error) {
	names, err := a.jobNames(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if n == job {
			continue
		}
		data, ok, err := a.get(ctx, layout.Job(n).Config())
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		cfg, err := a.decode(ctx, data)
		if err != nil {
			continue
		}
		if slices.Contains(cfg.After, job) {
			out = append(out, n)
		}
	}
	return out, nil
}

func (a *Admin) onlineServers(ctx context.Context, job string) ([]string, error) {
	paths := layout.Job(job)
	ids, err := a.children(ctx, paths.Servers())
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	var out []string
	for _, id := range ids {
		ok, _, err := a.rc.Exists(ctx, paths.Flag(id, layout.Status))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, id)
		}
	}
	return out, nil
}

// ConfigGet returns the job's config node as stored: one YAML document.
func (a *Admin) ConfigGet(ctx context.Context, job string) ([]byte, error) {
	if err := a.requireJob(ctx, job); err != nil {
		return nil, err
	}
	data, ok, err := a.get(ctx, layout.Job(job).Config())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w %q: it has no config node (it is being removed)", ErrUnknownJob, job)
	}
	return data, nil
}

// ConfigSet replaces the job's config with the YAML document data, after
// decoding and validating it with the codec (ErrInvalid, naming the key
// and line of every problem) and checking that it names job. What is
// stored is the codec's canonical document. Every instance applies the new
// config live. It reports whether the stored document changed.
func (a *Admin) ConfigSet(ctx context.Context, job string, data []byte) (Config, bool, error) {
	if err := a.requireJob(ctx, job); err != nil {
		return Config{}, false, err
	}
	cfg, err := a.decode(ctx, data)
	if err != nil {
		return Config{}, false, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if cfg.Name != job {
		return Config{}, false, fmt.Errorf("%w: the document names job %q, not %q (a job cannot be renamed)", ErrInvalid, cfg.Name, job)
	}
	doc := cfg.Document
	if len(doc) == 0 {
		doc = data
	}
	p := layout.Job(job).Config()
	cur, st, err := a.rc.Get(ctx, p)
	if errors.Is(err, regcenter.ErrNoNode) {
		return Config{}, false, fmt.Errorf("%w %q: it has no config node (it is being removed)", ErrUnknownJob, job)
	}
	if err != nil {
		return Config{}, false, err
	}
	if bytes.Equal(cur, doc) {
		return cfg, false, nil
	}
	if _, err := a.rc.Set(ctx, p, doc, st.Version); err != nil {
		if errors.Is(err, regcenter.ErrBadVersion) {
			return Config{}, false, fmt.Errorf("%w: the config of job %q changed while it was being written; look at it again", ErrConflict, job)
		}
		if errors.Is(err, regcenter.ErrNoNode) {
			return Config{}, false, fmt.Errorf("%w %q: its config node was deleted meanwhile", ErrUnknownJob, job)
		}
		return Config{}, false, err
	}
	return cfg, true, nil
}

// DisableItems keeps items out of every fire of job, from the next fire
// on, and returns the job's disabled items afterwards.
func (a *Admin) DisableItems(ctx context.Context, job string, items []int) ([]int, error) {
	return a.updateItems(ctx, job, items, true)
}

// EnableItems undoes DisableItems for items and returns the job's disabled
// items afterwards.
func (a *Admin) EnableItems(ctx context.Context, job string, items []int) ([]int, error) {
	return a.updateItems(ctx, job, items, false)
}

func (a *Admin) updateItems(ctx context.Context, job string, items []int, disable bool) ([]int, error) {
	if len(items) == 0 {
		return nil, fmt.Errorf("%w: no items given", ErrInvalid)
	}
	for _, it := range items {
		if it < 0 {
			return nil, fmt.Errorf("%w: item %d is negative", ErrInvalid, it)
		}
	}
	if err := a.requireJob(ctx, job); err != nil {
		return nil, err
	}
	paths := layout.Job(job)
	if data, ok, err := a.get(ctx, paths.Config()); err != nil {
		return nil, err
	} else if ok {
		if cfg, err := a.decode(ctx, data); err == nil {
			for _, it := range items {
				if it >= cfg.ShardingTotalCount {
					return nil, fmt.Errorf("%w: item %d is outside job %q's items 0..%d (shardingTotalCount %d)", ErrInvalid, it, job, cfg.ShardingTotalCount-1, cfg.ShardingTotalCount)
				}
			}
		}
	}
	p := paths.DisabledItems()
	for range 5 {
		data, st, err := a.rc.Get(ctx, p)
		exists := true
		if errors.Is(err, regcenter.ErrNoNode) {
			exists, err = false, nil
		}
		if err != nil {
			return nil, err
		}
		cur, _ := layout.ParseItems(string(data)) // garbage is overwritten
		set := map[int]bool{}
		for _, it := range cur {
			set[it] = true
		}
		for _, it := range items {
			set[it] = disable
		}
		var next []int
		for it, on := range set {
			if on {
				next = append(next, it)
			}
		}
		slices.Sort(next)
		if next == nil {
			next = []int{}
		}
		text := layout.FormatItems(next)
		switch {
		case exists && string(data) == text:
			return next, nil
		case !exists && len(next) == 0:
			return next, nil
		case !exists:
			_, err = a.rc.Create(ctx, p, []byte(text), regcenter.Persistent)
		case len(next) == 0:
			err = a.rc.Delete(ctx, p, st.Version)
		default:
			_, err = a.rc.Set(ctx, p, []byte(text), st.Version)
		}
		if err == nil {
			return next, nil
		}
		if !errors.Is(err, regcenter.ErrBadVersion) && !errors.Is(err, regcenter.ErrNodeExists) && !errors.Is(err, regcenter.ErrNoNode) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: job %q: the disabled items kept changing", ErrConflict, job)
}
