package firing

import (
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/retry"
)

// Job is the fire's compiled view of a job's config: what the fire path
// reads of it, set once when the config is compiled, read only after.
type Job struct {
	// Book is the job as the book reads it.
	Book book.Job
	// Done is the job as its completions read it (job/internal/completion).
	Done completion.Job
	// Retry is the retry policy with its defaults, as the execute stage
	// takes it.
	Retry retry.Policy
	// Sched is the compiled schedule; SchedErr why it did not compile
	// (Sched is then nil).
	Sched    cron.Schedule
	SchedErr error
	// Params are the items' parameters (nil when they did not parse).
	Params map[int]string
	// Total is the number of the job's items (Config.ShardingTotalCount),
	// PerShard the units of one item of a range job (Config.ItemsPerShard).
	Total    int
	PerShard int
	// JobParameter is the job's parameter, handed to every run.
	JobParameter string
	// Timeout bounds one call of the job (0: unbounded).
	Timeout time.Duration
	// Unmonitored: the job writes no running marks and no records.
	Unmonitored bool
	// PausedUntil holds every run of the job, owed ones too, until then.
	PausedUntil time.Time
	// StartingDeadline bounds the fires a make-up run runs (0: none).
	StartingDeadline time.Duration
	// Parents are the jobs a run waits for (Config.After), AfterTimeout
	// the bound of that wait (0: the next fire) and OnParentFailure what
	// a run does when a parent's fire did not succeed (a ParentPolicy's
	// value).
	Parents         []string
	AfterTimeout    time.Duration
	OnParentFailure string
}
