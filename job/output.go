package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardjob/shardjob/job/internal/runs"
)

// A run's output: a small JSON value a job records while it runs, handed
// to the listeners with the execution's result (listener.Execution.Output)
// and kept by the history. The slot and the encoding are
// job/internal/runs's (runs.Output).

// MaxOutputSize is the largest output a run may record, in bytes of its
// JSON encoding: 64 KiB.
const MaxOutputSize = 64 << 10

// Sentinel errors of RecordOutput.
var (
	// ErrOutputTooLarge means the value given to RecordOutput encodes to
	// more than MaxOutputSize bytes of JSON; the error names both sizes.
	// Nothing is recorded: the run keeps the output it had.
	ErrOutputTooLarge = errors.New("job: output too large")
	// ErrOutputOutsideRun means RecordOutput was given a context that is
	// not a run's (not the one Execute was given, nor derived from it), or
	// the run has returned already.
	ErrOutputOutsideRun = errors.New("job: output recorded outside a run")
)

// RecordOutput records v, encoded as JSON, as the output of the run ctx
// belongs to: call it from Execute (or ExecuteRange) with the context the
// run was given, or one derived from it. The last call wins. The output
// reaches the listeners with the execution's end, whatever the run
// returns, and the history keeps it (package history).
//
// v is encoded as encoding/json does, but with <, > and & left as they
// are; a json.RawMessage is taken as the JSON it holds (compacted), a
// []byte becomes a base64 string. An encoding of more than MaxOutputSize
// bytes is refused with ErrOutputTooLarge, a value encoding/json cannot
// encode with its error, and a context that is not a running run's with
// ErrOutputOutsideRun; a refused call changes nothing.
//
// RecordOutput is safe for concurrent use by the run's goroutines.
func RecordOutput(ctx context.Context, v any) error {
	slot, _ := ctx.Value(outputKey{}).(*runs.Output)
	if slot == nil {
		return fmt.Errorf("%w: the context is not one a job's Execute was given", ErrOutputOutsideRun)
	}
	data, err := runs.EncodeOutput(v)
	if err != nil {
		return fmt.Errorf("job: encoding the output as JSON: %w", err)
	}
	if len(data) > MaxOutputSize {
		return fmt.Errorf("%w: %d bytes of JSON, the limit is %d (MaxOutputSize)", ErrOutputTooLarge, len(data), MaxOutputSize)
	}
	if !slot.Set(data) {
		return fmt.Errorf("%w: the run has returned already", ErrOutputOutsideRun)
	}
	return nil
}

// outputKey is the context key of a run's output slot (runs.Output):
// runCtx answers it.
type outputKey struct{}
