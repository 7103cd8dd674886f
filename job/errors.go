package job

import "errors"

// Runtime sentinel errors of the scheduler. Configuration errors are in
// config.go.
var (
	// ErrSchedulerClosed means the scheduler was shut down.
	ErrSchedulerClosed = errors.New("job: scheduler shut down")
	// ErrAlreadyStarted means Start was called twice.
	ErrAlreadyStarted = errors.New("job: scheduler already started")
	// ErrServerIDInUse means another live instance registered the same
	// server id for the same job.
	ErrServerIDInUse = errors.New("job: server id in use by another live instance")
	// ErrUnknownJob means no job of that name is added.
	ErrUnknownJob = errors.New("job: unknown job")
	// ErrUnknownHandler means a YAML job names a handler that was not
	// provided.
	ErrUnknownHandler = errors.New("job: unknown handler")
	// ErrNotOwner means this instance no longer owns the item it executes.
	ErrNotOwner = errors.New("job: item no longer owned")
	// ErrClockSkew means the local clock differs from the registry's by more
	// than the job's MaxTimeDiff.
	ErrClockSkew = errors.New("job: clock differs from the registry's")
	// ErrExecutionTimeout means an execution ran past its job's
	// Config.Timeout: its context's cause, and wrapped by the error the
	// execution is recorded with.
	ErrExecutionTimeout = errors.New("job: execution timed out")
	// ErrReplaced is the cause of a run's context cancelled because a
	// later fire of its item replaced it (OverlapReplace); the run is
	// recorded as a failure wrapping it, and its fire is not made up.
	ErrReplaced = errors.New("job: run replaced by a later fire")
	// ErrInvalidOption means a scheduler option was given a bad value.
	ErrInvalidOption = errors.New("job: invalid option")
)
