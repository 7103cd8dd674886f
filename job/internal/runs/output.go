package runs

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Output holds a run's output (job.RecordOutput) until the run returns;
// the zero value is an open slot with no output.
type Output struct {
	mu     sync.Mutex
	data   json.RawMessage
	closed bool
}

// Set records data as the output, the last call winning, and reports
// whether it did: false once Take has closed the slot.
func (o *Output) Set(data json.RawMessage) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	o.data = data
	return true
}

// Take closes the slot, refusing later Sets, and returns the output (nil
// if none was recorded).
func (o *Output) Take() json.RawMessage {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	return o.data
}

// EncodeOutput encodes v as a run's output is recorded: as encoding/json
// does, with <, > and & left as they are and no newline after. Its error
// is encoding/json's.
func EncodeOutput(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
