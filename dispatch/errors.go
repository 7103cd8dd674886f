package dispatch

import "errors"

// Sentinel errors. Every error the package returns for a misuse or a
// missing row wraps one of these; test with errors.Is.
var (
	// ErrInvalid is bad input: a window whose end is not after its start,
	// an empty batch, a negative cap, an empty name. Nothing was changed.
	ErrInvalid = errors.New("dispatch: invalid input")
	// ErrUnknownWorker names a worker (tenant) that was never created.
	ErrUnknownWorker = errors.New("dispatch: unknown worker")
	// ErrUnknownTask names a task uuid the store does not hold.
	ErrUnknownTask = errors.New("dispatch: unknown task")
	// ErrAlreadyFinished is a Finish for a task that is finished already.
	ErrAlreadyFinished = errors.New("dispatch: task already finished")
	// ErrNotRunning is a Finish for a task that is not running (waiting,
	// cancelled or failed).
	ErrNotRunning = errors.New("dispatch: task is not running")
	// ErrStaleLease is a Finish or a result from an attempt that no longer
	// holds the task: its node's lease lapsed, or it timed out, and the
	// task was freed (and maybe started again elsewhere).
	ErrStaleLease = errors.New("dispatch: stale lease: the attempt no longer holds the task")
	// ErrFinal is a Cancel of a task that already ended (finished, failed
	// or cancelled).
	ErrFinal = errors.New("dispatch: task already ended")
	// ErrStarted is returned by Start on a dispatcher that runs already.
	ErrStarted = errors.New("dispatch: dispatcher already started")
	// ErrClosed is returned by calls on a dispatcher after Close.
	ErrClosed = errors.New("dispatch: dispatcher closed")
)
