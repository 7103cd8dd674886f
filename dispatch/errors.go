package dispatch

import (
	"errors"
	"fmt"
)

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
	// ErrAlreadyFinished is a Finish naming no attempt for a task that is
	// finished already. (A FinishAttempt naming the attempt that finished
	// it succeeds again; one naming another attempt is ErrStaleLease.)
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
	// ErrTooManyWorkers is a PutWorker of a new worker when Config.MaxWorkers
	// exist already. Nothing was changed.
	ErrTooManyWorkers = errors.New("dispatch: too many workers")
	// ErrStarted is returned by Start on a dispatcher that runs already.
	ErrStarted = errors.New("dispatch: dispatcher already started")
	// ErrClosed is returned by calls on a dispatcher after Close.
	ErrClosed = errors.New("dispatch: dispatcher closed")
)

// Webhook errors. Every one wraps ErrSignature, so a receiver may test for
// that alone.
var (
	// ErrSignature is a notice Verify or a ReplayGuard refused.
	ErrSignature = errors.New("dispatch: webhook signature refused")
	// ErrSignatureMalformed is a signature header that cannot be read: missing,
	// no t= or v1=, a timestamp that is not Unix seconds, a v1 that is not
	// 64 hex digits.
	ErrSignatureMalformed = fmt.Errorf("%w: malformed header", ErrSignature)
	// ErrSignatureMismatch is a signature that does not match the body and
	// timestamp under the secret: a wrong secret, or a changed body or
	// timestamp.
	ErrSignatureMismatch = fmt.Errorf("%w: mismatch", ErrSignature)
	// ErrSignatureExpired is a timestamp further from now than the
	// tolerance, in the past or in the future.
	ErrSignatureExpired = fmt.Errorf("%w: timestamp outside the tolerance", ErrSignature)
	// ErrSignatureReplayed is a notice a ReplayGuard has accepted before.
	ErrSignatureReplayed = fmt.Errorf("%w: replayed", ErrSignature)
	// ErrReplayGuardFull is a notice a ReplayGuard cannot remember: it
	// holds its capacity of notices still inside the window. It is refused
	// (the sender tries again later) rather than let a replay through.
	ErrReplayGuardFull = fmt.Errorf("%w: replay guard full", ErrSignature)
)

// ErrWebhookAddress is a webhook URL (or the address it resolves to) the
// dispatcher may not send to: plain http, or a loopback, private,
// link-local, carrier-grade NAT, multicast or unspecified address, unless
// Config allows it. At PutWorker it comes wrapped with ErrInvalid.
var ErrWebhookAddress = errors.New("dispatch: webhook address not allowed")
