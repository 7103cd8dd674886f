package job

import (
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/firing"
	"github.com/shardjob/shardjob/sharding"
)

// spec is a job's Config compiled once, when it is set: the schedule and
// time zone parsed, the item parameters split, the sharding strategy
// looked up. A fire's stages take the spec the runner holds (config), so
// nothing on the fire path parses the config again.
type spec struct {
	Config
	sched     cron.Schedule
	loc       *time.Location
	schedErr  error
	params    map[int]string
	paramsErr error
	strategy  sharding.Strategy
	stratErr  error
	// book is the job as the book reads it.
	book book.Job
	// fire is the job as the fire path reads it (job/internal/firing):
	// with it, as its completions read it (firing.Job.Done) and its retry
	// policy with its defaults (firing.Job.Retry). It is made at the
	// first use of this config (fireJob): a job that never fires needs
	// none.
	fire atomic.Pointer[firing.Job]
}

// compile compiles c. c is valid (Add and the config node's decoding
// validate it); the errors are kept for whoever asks all the same.
func compile(c Config) *spec {
	s := &spec{Config: c}
	s.sched, s.loc, s.schedErr = c.Schedule()
	s.params, s.paramsErr = c.ItemParameters()
	s.strategy, s.stratErr = sharding.Lookup(c.ShardingStrategy)
	s.book = book.Job{Items: c.ShardingTotalCount, Overlap: planOverlap(c.Overlap), SkipsMissed: c.skipsMissed()}
	if s.schedErr == nil {
		s.book.Schedule = s.sched
	}
	return s
}

// fireJob returns the job as the fire path reads it, made by the first
// call. Made from s alone, which never changes, any two makings are
// equal: of calls racing to make it, one stores its own and the others
// take that.
func (s *spec) fireJob() *firing.Job {
	if j := s.fire.Load(); j != nil {
		return j
	}
	c := &s.Config
	done := completion.Job{Book: s.book, ScheduleErr: s.schedErr, Unmonitored: c.Unmonitored, Failover: c.Failover, RecordInterval: c.RecordInterval}
	j := &firing.Job{Book: s.book, Done: done, Retry: c.Retry.policy(), Sched: s.sched, SchedErr: s.schedErr, Params: s.params,
		Total: c.ShardingTotalCount, PerShard: c.ItemsPerShard, JobParameter: c.JobParameter, Timeout: c.Timeout, Unmonitored: c.Unmonitored,
		PausedUntil: c.PausedUntil, StartingDeadline: c.StartingDeadline, Parents: c.parents(), AfterTimeout: c.AfterTimeout, OnParentFailure: string(c.OnParentFailure)}
	if s.fire.CompareAndSwap(nil, j) {
		return j
	}
	return s.fire.Load()
}

// planOverlap is p as the plan takes it.
func planOverlap(p OverlapPolicy) fireplan.Overlap {
	switch p {
	case OverlapAllow:
		return fireplan.OverlapAllow
	case OverlapReplace:
		return fireplan.OverlapReplace
	}
	return fireplan.OverlapWait
}

// bookKind is k as the book tells runs apart.
func bookKind(k Kind) book.Kind {
	switch k {
	case KindFire:
		return book.Fire
	case KindMisfire:
		return book.Misfire
	case KindFailover:
		return book.Failover
	case KindBackfill:
		return book.Backfill
	}
	return book.Trigger
}

// Schedule returns the compiled schedule (see Config.Schedule).
func (s *spec) Schedule() (cron.Schedule, *time.Location, error) {
	return s.sched, s.loc, s.schedErr
}

// ItemParameters returns the compiled item parameters (see
// Config.ItemParameters).
func (s *spec) ItemParameters() (map[int]string, error) { return s.params, s.paramsErr }

// Strategy returns the job's sharding strategy.
func (s *spec) Strategy() (sharding.Strategy, error) { return s.strategy, s.stratErr }
