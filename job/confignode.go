package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/sharding"
)

// The job's config node and this instance's config kept in agreement: the
// node written or read at registration (loadConfig), a change applied once
// it decodes (watchConfig, reloadConfig), and the node written back when
// the registry lost it (restoreConfig).

// loadConfig makes the config node and the local config agree: Overwrite
// writes ours; otherwise a valid stored config wins.
func (r *runner) loadConfig(ctx context.Context) error {
	local := r.config()
	data, err := local.Encode()
	if err != nil {
		return err
	}
	if local.Overwrite {
		_, err := r.rc.Set(ctx, r.paths.Config(), data, -1)
		if errors.Is(err, regcenter.ErrNoNode) {
			_, err = r.rc.Create(ctx, r.paths.Config(), data, regcenter.Persistent)
			if errors.Is(err, regcenter.ErrNodeExists) {
				_, err = r.rc.Set(ctx, r.paths.Config(), data, -1)
			}
		}
		if err != nil {
			return fmt.Errorf("job %q: write config: %w", r.name, err)
		}
		return nil
	}
	stored, _, err := r.rc.Get(ctx, r.paths.Config())
	if errors.Is(err, regcenter.ErrNoNode) {
		_, err = r.rc.Create(ctx, r.paths.Config(), data, regcenter.Persistent)
		if err == nil {
			return nil
		}
		if !errors.Is(err, regcenter.ErrNodeExists) {
			return fmt.Errorf("job %q: write config: %w", r.name, err)
		}
		stored, _, err = r.rc.Get(ctx, r.paths.Config())
	}
	if err != nil {
		return fmt.Errorf("job %q: read config: %w", r.name, err)
	}
	cfg, err := r.decodeStored(ctx, stored)
	if err != nil {
		r.log.Error("stored config is invalid; using this instance's config", "err", err)
		return nil
	}
	r.setConfig(cfg)
	return nil
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
	_, cancel, err := r.rc.WatchNow(ctx, r.paths.Config(), regcenter.WatchNode, func(ev regcenter.Event) {
		switch ev.Type {
		case regcenter.EventDataChanged, regcenter.EventCreated:
			r.goFunc(r.reloadConfig)
		case regcenter.EventDeleted:
			r.bg.Go(r.configGone)
		}
	})
	if err != nil {
		// Armed later by the dispatcher; what changes meanwhile is
		// reported then.
		r.log.Debug("config watch deferred", "err", err)
	}
	r.keepWatch(watchConfig, cancel)
}

// reloadConfig applies a changed config node; garbage is refused and the
// last good config stays in force.
func (r *runner) reloadConfig() {
	ctx, cancel := context.WithTimeout(r.rc.Session().Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	data, st, err := r.rc.Get(ctx, r.paths.Config())
	if err != nil {
		if !errors.Is(err, regcenter.ErrNoNode) {
			r.log.Warn("reading changed config", "err", err)
		}
		return
	}
	cfg, err := r.decodeStored(ctx, data)
	if err != nil {
		// Reported once per version of the node; the next valid document
		// is applied. The node is left as it is: what an operator wrote
		// by hand is theirs to correct, and `shardjob jobs` shows it.
		if r.bad.First(r.paths.Config(), st.Mzxid) {
			r.log.Error("config node rejected; last good config stays in force", "err", err, "version", st.Version)
			r.s.emit(Event{Kind: EventConfigRejected, Job: r.name, Err: err, Detail: err.Error()})
		}
		return
	}
	r.bad.Good(r.paths.Config())
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
			r.schedule()
		}
	}
	if cfg.ShardingTotalCount != old.ShardingTotalCount || cfg.ShardingStrategy != old.ShardingStrategy {
		r.setNecessary(ctx)
	}
	if cfg.Unmonitored != old.Unmonitored {
		// The next fire reads the assignment, and its assumption takes
		// the watches an unmonitored job proves by, or drops them (assume).
		r.forgetAssignment()
	}
	if (cfg.Unmonitored && !old.Unmonitored) || (cfg.Disabled && !old.Disabled) {
		// No fire here marks the items any more: the marks kept for the
		// next fires go (hold.go).
		r.releaseHolds(ctx, r.rc.Session(), nil)
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
// node is gone at re-registration: ZooKeeper lost its data (a wiped
// ensemble comes back empty), and the cluster's truth is what its instances
// still hold. A job removed on purpose never gets here: its instances saw
// the config node's deletion and stopped. A job not registered here yet
// (a session lost while Start was registering thousands of jobs, before
// anyone made this one's tree) has nothing to restore: the node is made
// as its registration would make it, and nothing is reported.
func (r *runner) restoreConfig(ctx context.Context) error {
	ok, _, err := r.rc.Exists(ctx, r.paths.Config())
	if err != nil || ok {
		return err
	}
	data, err := r.config().Encode()
	if err != nil {
		return err
	}
	_, err = r.rc.Create(ctx, r.paths.Config(), data, regcenter.Persistent)
	if errors.Is(err, regcenter.ErrNodeExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("job %q: restore config node: %w", r.name, err)
	}
	if reg, _ := r.book.Session(); reg == nil {
		r.log.Debug("config node written at registration, under a new session")
		return nil
	}
	r.log.Warn("config node was missing at re-registration (the registry lost its data?); restored it from this instance's config")
	return nil
}
