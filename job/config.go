package job

import (
	"errors"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/job/internal/configcheck"
	"github.com/shardjob/shardjob/job/internal/retry"
)

// Sentinel errors. Every configuration problem reported by Validate,
// Schedule, ItemParameters, Encode, DecodeConfig and DecodeConfigNode (and
// so by package jobfile's Load and LoadFile) wraps ErrInvalidConfig and,
// where one applies, a more specific sentinel, so callers can test either
// with errors.Is.
var (
	// ErrInvalidConfig is the umbrella for every configuration problem.
	ErrInvalidConfig = errors.New("job: invalid config")
	// ErrInvalidName means a job name is missing or is not a usable
	// registry node name.
	ErrInvalidName = errors.New("job: invalid name")
	// ErrInvalidCron means the cron expression is missing, malformed or
	// never fires.
	ErrInvalidCron = errors.New("job: invalid cron expression")
	// ErrInvalidTimeZone means the time zone is not a known IANA name.
	ErrInvalidTimeZone = errors.New("job: invalid time zone")
	// ErrInvalidShardingCount means shardingTotalCount is outside
	// 1..MaxShardingTotalCount.
	ErrInvalidShardingCount = errors.New("job: invalid sharding total count")
	// ErrInvalidItemParameters means shardingItemParameters is malformed,
	// repeats an item or names an item outside [0, shardingTotalCount).
	ErrInvalidItemParameters = errors.New("job: invalid sharding item parameters")
	// ErrUnknownKey means a configuration document has a key this package
	// does not know (keys are case-sensitive).
	ErrUnknownKey = errors.New("job: unknown config key")
	// ErrDuplicateJob means two jobs share a name.
	ErrDuplicateJob = errors.New("job: duplicate job name")
	// ErrConfigTooLarge means a config document, or one of its values, is
	// larger than its limit (MaxConfigBytes, MaxDocumentBytes, a job
	// file's jobfile.MaxFileBytes); the error says which and by how much.
	ErrConfigTooLarge = errors.New("job: config too large")
	// ErrConfigTooComplex means a YAML document has an alias or merge key
	// that refers to itself, nests deeper than MaxYAMLDepth, or expands
	// through its aliases and merge keys beyond YAMLNodeBudget.
	ErrConfigTooComplex = errors.New("job: config document too complex")
)

// MisfirePolicy says what happens to a fire that found its item still
// running.
type MisfirePolicy string

const (
	// MisfireOnce, the default, runs the item once more as soon as the
	// running execution finishes. Any number of fires missed while it ran
	// collapse into that one extra run.
	MisfireOnce MisfirePolicy = configcheck.MisfireOnce
	// MisfireSkip drops fires that found the item still running.
	MisfireSkip MisfirePolicy = configcheck.MisfireSkip
)

// OverlapPolicy says what a fire does when its item's previous run is
// still going (Config.Overlap).
type OverlapPolicy string

const (
	// OverlapBufferOne, the default, runs the item once more when the
	// running execution ends, standing for every fire it missed
	// (MisfireOnce).
	OverlapBufferOne OverlapPolicy = configcheck.OverlapBufferOne
	// OverlapSkip drops the fires that found the item still running
	// (MisfireSkip).
	OverlapSkip OverlapPolicy = configcheck.OverlapSkip
	// OverlapReplace cancels the running execution through its context
	// (its cause is ErrReplaced) and runs the fire once it has returned.
	// The replaced run is recorded as a failure and its fire is not made
	// up. Only a run on this instance can be replaced: a fire that finds
	// its item running on another instance (briefly, after a reshard)
	// buffers one run instead. A job that does not watch its context is
	// not stopped; the fire waits for it as with OverlapBufferOne.
	OverlapReplace OverlapPolicy = configcheck.OverlapReplace
	// OverlapAllow runs a fire's item alongside the item's run still going
	// on this instance: the item-level exclusion is off, for jobs whose
	// runs are safe side by side. It needs Unmonitored: an item's running
	// and completed marks, which promise one run of it at a time across
	// the cluster and the make-up of what a crash cut short, cannot stand
	// for two runs at once, and an unmonitored job already gives up that
	// promise across instances (see Unmonitored). Nothing is owed or made
	// up for a fire that found its item busy, since the fire ran.
	OverlapAllow OverlapPolicy = configcheck.OverlapAllow
)

// skipsMissed reports whether the job drops fires that found their item
// busy (Misfire skip, or Overlap skip), instead of owing them a run.
func (c Config) skipsMissed() bool {
	return c.Misfire == MisfireSkip || c.Overlap == OverlapSkip
}

// Limits and defaults of Config.
const (
	// MaxNameLength is the longest job name accepted.
	MaxNameLength = configcheck.MaxNameLength
	// MaxShardingTotalCount is the largest ShardingTotalCount accepted.
	MaxShardingTotalCount = configcheck.MaxShardingTotalCount
	// MaxItemsPerShard is the largest ItemsPerShard accepted.
	MaxItemsPerShard = configcheck.MaxItemsPerShard
	// DefaultReconcileInterval is used when ReconcileInterval is 0.
	DefaultReconcileInterval = configcheck.DefaultReconcileInterval
	// DefaultShardingStrategy is used when ShardingStrategy is "".
	DefaultShardingStrategy = "BALANCED"
	// MinInterval is the smallest non-zero MaxTimeDiff and
	// ReconcileInterval, and the shortest "@every" period.
	MinInterval = configcheck.MinInterval
)

// Config is the configuration of one job. The zero value is not valid: Name,
// Cron and ShardingTotalCount are required. Every other field's zero value
// is usable and means what its comment says; WithDefaults spells those
// defaults out.
//
// A job's Config is stored in the registry (see Encode and DecodeConfig) and
// that copy is authoritative for the cluster: an instance starting with a
// different Config uses the registry's unless Overwrite is set.
type Config struct {
	// Name identifies the job and is its registry node name: 1 to
	// MaxNameLength characters from [A-Za-z0-9._-], not "." or "..".
	// Required.
	Name string
	// Cron is when the job fires: six fields starting with seconds
	// ("*/5 * * * * *"), or a descriptor such as "@hourly" or "@every 30s".
	// CRON_TZ= and TZ= prefixes are rejected; set TimeZone instead.
	// Required.
	Cron string
	// TimeZone is the IANA zone Cron is evaluated in, e.g. "Asia/Shanghai".
	// "" means each process's local zone, which differs between instances
	// running in different zones.
	TimeZone string
	// ShardingTotalCount is the number of sharding items, 0..count-1,
	// spread over the job's instances. Required, 1..MaxShardingTotalCount.
	ShardingTotalCount int
	// ItemsPerShard, for a RangeJob, is how many records one item stands
	// for (RangeContext.Start and End); 0 means 1. At most
	// MaxItemsPerShard.
	ItemsPerShard int
	// ShardingItemParameters gives items a parameter each, as
	// "0=Beijing,1=Shanghai". Every entry needs its '=' (the value may be
	// empty); keys are items in [0, ShardingTotalCount), trimmed of
	// surrounding whitespace, each at most once. Items not listed get "".
	ShardingItemParameters string
	// JobParameter is passed unchanged to every execution.
	JobParameter string
	// Failover, when true, lets a running instance take over the items of
	// an instance that crashed while executing them, instead of waiting for
	// the next fire. Default false.
	Failover bool
	// Misfire is what happens to a fire that found its item still running.
	// "" means MisfireOnce. Overlap says the same with more choices; set
	// one or the other (or both, agreeing).
	Misfire MisfirePolicy
	// Overlap is what a fire does when its item's previous run is still
	// going: OverlapBufferOne (the default, as MisfireOnce), OverlapSkip
	// (as MisfireSkip), OverlapReplace, or OverlapAllow (with Unmonitored
	// only). "" means Misfire decides.
	Overlap OverlapPolicy
	// Unmonitored turns off marking items running and completed in the
	// registry. By default (false) the marks are kept, which is what lets
	// an instance see that an item is still running elsewhere. Turning them
	// off saves registry writes for very frequent jobs — an unmonitored
	// fire sends no request at all: watches on the instance's assignment and
	// the reshard epoch stand for its proof — but gives up the guarantee
	// that an item never runs on two instances at once (after a resharding,
	// say), along with the failover and misfire handling that rely on those
	// marks: a fire missed while an instance died is not made up.
	//
	// In YAML this is the inverted key monitorExecution (default true).
	Unmonitored bool
	// RecordInterval, when positive, is this job's opt-in to records
	// written behind, for a job whose runs are idempotent: while this
	// instance holds an item, its completed record is written at most once
	// per RecordInterval rather than at every run's completion. It saves a
	// registry write per run; what it costs is ElasticJob's promise that a
	// completed fire is never run again: a crash, or a session lost for
	// good, leaves up to RecordInterval of the item's completed runs
	// unrecorded, and the item's next owner runs them again, in one make-up
	// run (docs/guarantees.md). 0, the default, records every completion
	// (group-committed with the instance's other completions): a crash runs
	// again only the runs in flight. At most MaxRecordInterval; a job with
	// dependents (Config.After names it) may not set it, since they wait
	// on its records; an unmonitored job keeps no records.
	RecordInterval time.Duration
	// MaxTimeDiff is the largest clock difference tolerated between this
	// instance and the registry; an instance beyond it refuses to run the job.
	// It is the host's real clock that is compared, even when the scheduler
	// fires by another (WithClock). 0 disables the check; otherwise at least
	// MinInterval.
	MaxTimeDiff time.Duration
	// ReconcileInterval is how often an instance re-reads its state from
	// the registry to repair anything a lost watch missed. 0 means
	// DefaultReconcileInterval; otherwise at least MinInterval.
	ReconcileInterval time.Duration
	// ShardingStrategy names the strategy that assigns items to instances.
	// "" means DefaultShardingStrategy. Only the form of the name is
	// checked here; the scheduler checks that it is registered.
	ShardingStrategy string
	// Timeout bounds each execution of an item: its context gets the
	// deadline, and an execution still running at it is a failure
	// wrapping ErrExecutionTimeout (recorded as the item's error, logged,
	// and seen by error handlers), not a fire to run again; StillOwner
	// fails from the deadline on. 0, the default, means no bound.
	Timeout time.Duration
	// Start, when set, is the earliest time the job fires: the cron's
	// fires before it are not fires at all (nothing owes or makes them
	// up). In YAML: an RFC 3339 time ("2026-12-01T08:00:00Z"), a date and
	// time read in TimeZone ("2026-12-01T08:00:00"), or a date (midnight
	// in TimeZone).
	Start time.Time
	// End, when set, is the latest time the job fires (written as Start).
	End time.Time
	// Limit, when positive, is how many fires the job has, counted from
	// Start (which it needs), at most MaxLimit: the fires after the
	// Limit-th are not fires. Every instance computes the same last fire
	// from the config, without a counter in the registry.
	Limit int
	// Exclude lists days the job does not fire on, in TimeZone, separated
	// by commas: weekdays ("sat", "Sunday") and dates ("2026-12-25"). An
	// excluded day's fires are not fires: nothing owes or makes them up.
	// In YAML a string or a list.
	Exclude string
	// Jitter, when positive, delays each fire by up to Jitter (whole
	// milliseconds), so that jobs on the same cron do not all start at
	// once. The delay is derived from the job's name and the fire's
	// scheduled time, the same on every instance, and kept under half the
	// time to the next fire so that fires keep their order. The delayed
	// time is the fire's time everywhere (ShardingContext.FireTime, the
	// history, the records).
	Jitter time.Duration
	// StartingDeadline, when positive, is how late a fire may still start:
	// a make-up run (a fire missed while the item ran, while the instance
	// was disconnected, or failed over) runs only the fires of the last
	// StartingDeadline; older ones are dropped, counted (Stats.FiresExpired,
	// EventFiresExpired) and logged — Kubernetes CronJob's
	// startingDeadlineSeconds. Fires that may have run already (a failover
	// run's, see ShardingContext.MayHaveRunThrough) are dropped and logged
	// but never counted or reported as expired. 0, the default, makes up every fire; otherwise
	// at least MinInterval.
	StartingDeadline time.Duration
	// PausedUntil, when set, holds the job's fires until that time on
	// every instance: the fires before it are dropped, not made up.
	// PauseNote says why, for operators (shardjob status and the console
	// show it). Written as Start.
	PausedUntil time.Time
	// PauseNote is the reason for PausedUntil; it needs PausedUntil.
	PauseNote string
	// After names the jobs this one runs after, separated by commas (in
	// YAML a string or a list): each run waits until every one of them
	// has completed the same fires on every item, across the cluster. The
	// parents are defined with it (on the same scheduler, or in the same
	// file), monitored, and on the same schedule (cron, zone, calendar);
	// cycles are refused, named. At most MaxParents.
	After string
	// OnParentFailure is what a run does when a parent's fire failed or
	// did not complete within AfterTimeout: ParentSkip (the default),
	// ParentRun or ParentAlert. It needs After.
	OnParentFailure ParentPolicy
	// AfterTimeout bounds a run's wait for its parents; 0 means until the
	// job's next fire (an hour for its last fire, when a calendar's limit
	// or end leaves no next one). It needs After.
	AfterTimeout time.Duration
	// Description is free text for operators.
	Description string
	// Disabled registers the job without letting it fire (ElasticJob's
	// "disabled on startup"); an operator enables it later.
	Disabled bool
	// Overwrite makes this instance's Config replace the one in the registry
	// when the job starts. Without it the stored Config wins and this one
	// is used only when none is stored yet.
	Overwrite bool
	// Retry, when its Attempts is set, runs a failed item run again on
	// the same instance after a backoff, within the fire's window (see
	// RetryPolicy). The zero value retries nothing.
	Retry RetryPolicy
	// Alert raises alerts for late fires and for a job that has not run
	// (see AlertPolicy). The zero value means the scheduler's
	// WithAlertDefault, if any. In YAML: alert: {late: 30s, notRunFor: 2h}.
	Alert AlertPolicy
}

// Validate reports every problem with c at once, or nil. The error joins
// them as errors.Join does (its Unwrap() []error returns them); each
// entry names the job and the field, e.g.
//
//	job "orders-sync": cron "*/5 * * *": expected exactly 6 fields, found 4: [*/5 * * *]
//
// errors.Is on it matches ErrInvalidConfig and the specific sentinel of
// every entry (ErrInvalidName, ErrInvalidCron, ...).
func (c Config) Validate() error { return placed(c.Name, c.check(time.Now())) }

// placed places problems, found in the config of the job named name, and
// joins them (nil for none).
func placed(name string, problems []*configError) error {
	errs := make([]error, len(problems))
	for i, p := range problems {
		p.place = jobPlace(name)
		errs[i] = p
	}
	return joinConfigErrors(errs)
}

// check returns c's problems without a place, in the order Validate
// reports them. now anchors the "never fires" test.
func (c Config) check(now time.Time) []*configError {
	var errs []*configError
	add := func(key string, kind error, subject, detail string) *configError {
		e := &configError{key: key, kind: kind, subject: subject, detail: detail}
		errs = append(errs, e)
		return e
	}
	room := func(key string, kind configcheck.Kind, subject, detail string) {
		add(key, checkKinds[kind], subject, detail)
	}

	configcheck.Name(room, c.Name)
	base, loc, problems := c.parse() // the parsed cron, for the calendar's checks
	errs = append(errs, problems...)
	if base != nil && base.Next(now.In(loc)).IsZero() {
		add("cron", ErrInvalidCron, "cron "+quoteShort(c.Cron), "never fires")
		base = nil
	}
	countOK := configcheck.Counts(room, c.ShardingTotalCount, c.ItemsPerShard)

	oversized := false
	for _, f := range []struct{ key, value string }{
		{"shardingItemParameters", c.ShardingItemParameters}, {"jobParameter", c.JobParameter}, {"description", c.Description},
	} {
		if len(f.value) > MaxConfigBytes {
			errs = append(errs, tooLarge(f.key, f.key, len(f.value), MaxConfigBytes))
			oversized = true
		}
	}
	total := c.ShardingTotalCount
	if !countOK {
		total = 0 // checking the items' range would only repeat the count's problem
	}
	if len(c.ShardingItemParameters) <= MaxConfigBytes {
		_, problems := configcheck.ItemParameters(c.ShardingItemParameters, total)
		for _, p := range problems {
			add("shardingItemParameters", ErrInvalidItemParameters, "shardingItemParameters "+quoteShort(c.ShardingItemParameters), p)
		}
	}
	if !oversized {
		// Each value fits; the whole document, as Encode writes it (quoted
		// and escaped), must fit too.
		if doc, err := c.marshal(); err != nil {
			add("", ErrInvalidConfig, "config", "cannot be encoded: "+err.Error())
		} else if len(doc) > MaxConfigBytes {
			errs = append(errs, tooLarge("", "the encoded config document", len(doc), MaxConfigBytes))
		}
	}

	configcheck.Policies(room, string(c.Misfire), string(c.Overlap), c.Unmonitored)
	configcheck.Intervals(room, c.Timeout, c.RecordInterval, MaxRecordInterval, c.Unmonitored, c.MaxTimeDiff, c.ReconcileInterval)
	configcheck.Calendar(room, calendarOf(c), c.StartingDeadline, c.PauseNote, base, loc)
	configcheck.After(room, c.Name, c.After, c.parents(), c.Unmonitored, string(c.OnParentFailure), c.AfterTimeout)
	configcheck.Retry(room, retry.Policy(c.Retry))
	configcheck.Alert(room, c.Alert.Late, c.Alert.NotRunFor, base, now)
	configcheck.Strategy(room, c.ShardingStrategy)
	return errs
}

// checkKinds are the sentinels of configcheck's kinds of problem.
var checkKinds = map[configcheck.Kind]error{configcheck.Invalid: ErrInvalidConfig, configcheck.BadName: ErrInvalidName,
	configcheck.BadCount: ErrInvalidShardingCount, configcheck.NeverFires: ErrNeverFires}

// WithDefaults returns a copy of c with the defaults of Misfire,
// ReconcileInterval, ShardingStrategy and, when Retry.Attempts is set,
// Retry's backoffs filled in. TimeZone stays "" (the
// local zone) when unset.
func (c Config) WithDefaults() Config {
	if c.Misfire == "" {
		// Overlap, when set, says the same with more choices: the default
		// agrees with it, or the stored document would fail its own check.
		c.Misfire = MisfireOnce
		if c.Overlap == OverlapSkip {
			c.Misfire = MisfireSkip
		}
	}
	if c.ReconcileInterval == 0 {
		c.ReconcileInterval = DefaultReconcileInterval
	}
	if c.ShardingStrategy == "" {
		c.ShardingStrategy = DefaultShardingStrategy
	}
	c.Retry = c.Retry.withDefaults()
	return c
}

// location resolves TimeZone; "" is time.Local.
func (c Config) location() (*time.Location, error) {
	if c.TimeZone == "" {
		return time.Local, nil
	}
	return time.LoadLocation(c.TimeZone)
}

// Schedule parses Cron and TimeZone. The schedule computes Next in the
// returned location whatever the location of the time passed to it: a
// *cron.SpecSchedule has its Location set, and a descriptor such as
// "@every 1m" counts whole periods from the epoch (or from Start), which
// does not depend on a zone. The error wraps ErrInvalidConfig and
// ErrInvalidCron or ErrInvalidTimeZone.
func (c Config) Schedule() (cron.Schedule, *time.Location, error) {
	sched, loc, problems := c.parse()
	if len(problems) > 0 {
		return nil, nil, placed(c.Name, problems)
	}
	if c.hasCalendar() {
		return newCalendarSchedule(c, sched, loc), loc, nil
	}
	return sched, loc, nil
}

// parse parses TimeZone and Cron, with their problems (without a place):
// the zone is UTC when TimeZone is unknown, the cron nil when it has a
// problem.
func (c Config) parse() (cron.Schedule, *time.Location, []*configError) {
	var errs []*configError
	loc, err := c.location()
	if err != nil {
		errs = append(errs, &configError{key: "timeZone", kind: ErrInvalidTimeZone, subject: "timeZone " + quoteShort(c.TimeZone),
			detail: "unknown time zone", cause: err})
		loc = time.UTC
	}
	if c.Cron == "" {
		return nil, loc, append(errs, &configError{key: "cron", kind: ErrInvalidCron, subject: "cron is required"})
	}
	sched, perr := parseCron(c.Cron, loc)
	if perr != nil {
		return nil, loc, append(errs, perr)
	}
	return sched, loc, errs
}

// ItemParameters parses ShardingItemParameters into item -> parameter.
// Items not listed are absent from the map; "" gives an empty map. Keys
// are checked against ShardingTotalCount. The error wraps ErrInvalidConfig
// and ErrInvalidItemParameters and lists every problem.
func (c Config) ItemParameters() (map[int]string, error) {
	total := c.ShardingTotalCount
	if total <= 0 {
		total = -1 // no item is in range
	}
	params, problems := configcheck.ItemParameters(c.ShardingItemParameters, total)
	if len(problems) == 0 {
		return params, nil
	}
	errs := make([]*configError, len(problems))
	for i, p := range problems {
		errs[i] = &configError{key: "shardingItemParameters", kind: ErrInvalidItemParameters,
			subject: "shardingItemParameters " + quoteShort(c.ShardingItemParameters), detail: p}
	}
	return nil, placed(c.Name, errs)
}
