package job

import (
	"context"
	"fmt"

	"github.com/shardjob/shardjob/job/internal/confignode"
	"github.com/shardjob/shardjob/job/internal/registration"
	"github.com/shardjob/shardjob/sharding"
)

// The job's config node and this instance's config kept in agreement
// (job/internal/confignode's Node): the node written or read at
// registration (loadConfig), a change applied once it decodes
// (watchConfig, reloadConfig), and the node written back when the
// registry lost it (restoreConfig).

// newConfigNode returns the job's config node, its document this
// instance's Config.
func (r *runner) newConfigNode() *confignode.Node[Config] {
	return &confignode.Node[Config]{RC: r.rc, Path: r.paths.Config(), Job: r.name, Log: r.log, Bad: &r.bad,
		Encode: func() ([]byte, error) { return r.config().Encode() }, Decode: r.decodeStored}
}

// loadConfig makes the config node and the local config agree: Overwrite
// writes ours; otherwise a valid stored config wins (confignode.Node.Load).
func (r *runner) loadConfig(ctx context.Context) error {
	cfg, use, err := r.cfgNode.Load(ctx, r.config().Overwrite)
	if use {
		r.setConfig(cfg)
	}
	return err
}

func (r *runner) decodeStored(ctx context.Context, data []byte) (Config, error) {
	cfg, err := DecodeConfigContext(ctx, data)
	if err != nil {
		return Config{}, err
	}
	if cfg.Name != r.name {
		return Config{}, fmt.Errorf("%w: config node of job %q names job %q", ErrInvalidConfig, r.name, cfg.Name)
	}
	cfg = cfg.WithDefaults()
	if _, err := sharding.Lookup(cfg.ShardingStrategy); err != nil {
		return Config{}, fmt.Errorf("%w: job %q: %w", ErrInvalidConfig, r.name, err)
	}
	return cfg, nil
}

// watchConfig watches the config node: a change is applied, a deletion
// (the job removed from the cluster) stops the job here once the node is
// read back absent (configGone).
func (r *runner) watchConfig(ctx context.Context) {
	r.watch.Keep(registration.WatchConfig, r.cfgNode.Watch(ctx, func() { r.goFunc(r.reloadConfig) }, func() { r.bg.Go(r.configGone) }))
}

// configGone runs when a watch reports the config node deleted. The job
// stops here only when the node is absent when read back
// (confignode.Node.Gone); a value nobody can decode is a bad config, not
// a removal.
func (r *runner) configGone(ctx context.Context) {
	switch r.cfgNode.Gone(ctx, func() (context.Context, context.CancelFunc) { return r.coordCtx(r.rc.Session()) }, r.sessionTimeout) {
	case confignode.Absent:
		r.s.removeRemoved(r)
	case confignode.Present:
		r.reloadConfig()
	}
}

// reloadConfig applies a changed config node; garbage is refused and the
// last good config stays in force.
func (r *runner) reloadConfig() {
	ctx, cancel := context.WithTimeout(r.rc.Session().Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	cfg, ok, rejected := r.cfgNode.Read(ctx)
	if rejected != nil {
		r.s.emit(Event{Kind: EventConfigRejected, Job: r.name, Err: rejected, Detail: rejected.Error()})
	}
	if !ok {
		return
	}
	old := r.config().Config
	if cfg == old {
		return
	}
	if cfg.After != old.After || !sameSchedule(cfg, old) || cfg.Unmonitored != old.Unmonitored || cfg.RecordInterval != old.RecordInterval {
		// The checks Add makes: a parent missing here, a cycle, a parent
		// on another schedule or whose records are not waited on.
		if err := r.s.dependenciesWith(cfg); err != nil {
			r.log.Error("config node rejected: its dependencies do not hold on this scheduler; last good config stays in force", "err", err)
			return
		}
	}
	if cfg.Failover && !old.Failover {
		// The queue is made on demand; it must exist before this config
		// is in force, since a run cut short by shutdown then queues its
		// item in its completion transaction.
		if err := r.rc.EnsurePath(ctx, r.paths.FailoverItems()); err != nil {
			r.log.Warn("making the failover queue; config change not applied yet", "err", err)
			return
		}
	}
	r.setConfig(cfg)
	if cfg.Alert != old.Alert {
		r.s.alert.book.Set(r.name, r.s.alertPolicy(cfg))
	}
	if cfg.After != old.After {
		// A parent added by the reload writes its records at every run
		// from now on: this job waits on them.
		r.s.noteAwaited()
	}
	r.log.Info("config changed", "cron", cfg.Cron, "items", cfg.ShardingTotalCount)
	r.s.emit(Event{Kind: EventConfigChanged, Job: r.name, Units: cfg.ShardingTotalCount,
		Detail: fmt.Sprintf("cron %q, %d items, disabled=%t", cfg.Cron, cfg.ShardingTotalCount, cfg.Disabled)})
	if cfg.Cron != old.Cron || cfg.TimeZone != old.TimeZone || cfg.Disabled != old.Disabled || !sameCalendar(cfg, old) {
		if !r.book.Stopping() {
			r.scheduled.Store(0) // a new schedule (or the job enabled): fires begin again
			r.schedule()
		}
	}
	if cfg.ShardingTotalCount != old.ShardingTotalCount || cfg.ShardingStrategy != old.ShardingStrategy {
		r.setNecessary(ctx)
	}
	if cfg.Unmonitored != old.Unmonitored {
		// The next fire reads the assignment, and its assumption takes
		// the watches an unmonitored job proves by, or drops them
		// (assigned.Source). A job that never fired assumes nothing.
		if a := r.activeIfMade(); a != nil {
			a.assigned.Forget()
		}
	}
	if (cfg.Unmonitored && !old.Unmonitored) || (cfg.Disabled && !old.Disabled) {
		// No fire here marks the items any more: the marks kept for the
		// next fires go (hold.go); a job that never fired keeps none.
		if a := r.activeIfMade(); a != nil {
			a.held.Release(ctx, r.rc.Session(), nil)
		}
	}
	if cfg.Failover && !old.Failover {
		// Failover turned on: claim queued items, and lead between fires.
		r.watchQueue(ctx)
		if err := r.prepare(ctx); err != nil {
			r.log.Warn("preparing for failover", "err", err)
		}
	}
}

// restoreConfig writes this instance's config to the config node when the
// node is gone at re-registration (confignode.Node.Restore).
func (r *runner) restoreConfig(ctx context.Context) error {
	return r.cfgNode.Restore(ctx, func() bool { reg, _ := r.book.Session(); return reg != nil })
}
