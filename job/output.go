package job

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// A run's output: a small JSON value a job records while it runs, handed
// to the listeners with the execution's result (listener.Execution.Output)
// and kept by the history.

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
	slot, _ := ctx.Value(outputKey{}).(*outputSlot)
	if slot == nil {
		return fmt.Errorf("%w: the context is not one a job's Execute was given", ErrOutputOutsideRun)
	}
	data, err := encodeOutput(v)
	if err != nil {
		return err
	}
	return slot.set(data)
}

// encodeOutput encodes v as RecordOutput records it.
func encodeOutput(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("job: encoding the output as JSON: %w", err)
	}
	data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(data) > MaxOutputSize {
		return nil, fmt.Errorf("%w: %d bytes of JSON, the limit is %d (MaxOutputSize)", ErrOutputTooLarge, len(data), MaxOutputSize)
	}
	return data, nil
}

// outputKey is the context key of a run's outputSlot: runCtx answers it.
type outputKey struct{}

// outputSlot holds a run's output until the run returns; the zero value
// is an open slot with no output.
type outputSlot struct {
	mu     sync.Mutex
	data   json.RawMessage
	closed bool
}

func (s *outputSlot) set(data json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w: the run has returned already", ErrOutputOutsideRun)
	}
	s.data = data
	return nil
}

// take closes the slot, refusing later records, and returns the output
// (nil if none was recorded).
func (s *outputSlot) take() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.data
}
