package stored

import (
	"fmt"
	"strconv"
)

// Running is the value of an item's running mark
// (execution/{item}/running): the server running it, the fire it runs,
// the kind of run, when it began (ms since the epoch) and the registry
// session it was marked under. Stored values are JSON, so that operators
// and the command line can read them.
type Running struct {
	Server  string `json:"server"`
	Fire    int64  `json:"fire"`
	Kind    string `json:"kind"`
	Begin   int64  `json:"begin"`
	Session string `json:"session"`
}

// Marshal encodes m as json.Marshal does, byte for byte, without its
// reflection: a fire writes one per item it marks.
func (m *Running) Marshal() []byte {
	b := make([]byte, 0, 80+len(m.Server)+len(m.Kind)+len(m.Session))
	b = append(b, `{"server":`...)
	b = appendJSONString(b, m.Server)
	b = append(b, `,"fire":`...)
	b = strconv.AppendInt(b, m.Fire, 10)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, m.Kind)
	b = append(b, `,"begin":`...)
	b = strconv.AppendInt(b, m.Begin, 10)
	b = append(b, `,"session":`...)
	b = appendJSONString(b, m.Session)
	return append(b, '}')
}

// DecodeRunning decodes a running mark: it names a server.
func DecodeRunning(data []byte) (Running, error) {
	var m Running
	if err := decodeJSON(data, &m, "running mark"); err != nil {
		return Running{}, err
	}
	if m.Server == "" {
		return Running{}, fmt.Errorf("%w: running mark without a server", ErrBadValue)
	}
	return m, nil
}

// Misfire is the value of an item's misfire mark
// (execution/{item}/misfire): the earliest fire it is owed, in ms since
// the epoch.
type Misfire struct {
	Since int64 `json:"since"`
}

// Marshal encodes m as json.Marshal does.
func (m Misfire) Marshal() []byte {
	b := make([]byte, 0, 32)
	b = append(b, `{"since":`...)
	b = strconv.AppendInt(b, m.Since, 10)
	return append(b, '}')
}

// DecodeMisfire decodes a misfire mark: the first fire owed, from 1970 to
// 9999.
func DecodeMisfire(data []byte) (Misfire, error) {
	var m Misfire
	if err := decodeJSON(data, &m, "misfire mark"); err != nil {
		return Misfire{}, err
	}
	if !validMillis(m.Since) {
		return Misfire{}, fmt.Errorf("%w: misfire mark since %d", ErrBadValue, m.Since)
	}
	return m, nil
}

// Retry is the value of an item's retry node (execution/{item}/retry):
// the fire its owner waits to run again, in ms since the epoch, and how
// many of its attempts failed.
type Retry struct {
	Fire   int64 `json:"fire"`
	Failed int   `json:"failed"`
}

// MaxRetryFailed bounds the failed attempts a retry node may name: more
// than any policy allows (retry.MaxAttempts).
const MaxRetryFailed = 1000

// Marshal encodes m as json.Marshal does.
func (m Retry) Marshal() []byte {
	b := make([]byte, 0, 40)
	b = append(b, `{"fire":`...)
	b = strconv.AppendInt(b, m.Fire, 10)
	b = append(b, `,"failed":`...)
	b = strconv.AppendInt(b, int64(m.Failed), 10)
	return append(b, '}')
}

// DecodeRetry decodes a retry node: a fire from 1970 to 9999 and from 1
// to MaxRetryFailed failed attempts.
func DecodeRetry(data []byte) (Retry, error) {
	var m Retry
	if err := decodeJSON(data, &m, "retry node"); err != nil {
		return Retry{}, err
	}
	if !validMillis(m.Fire) || m.Failed < 1 || m.Failed > MaxRetryFailed {
		return Retry{}, fmt.Errorf("%w: retry node of fire %d with %d failed attempts", ErrBadValue, m.Fire, m.Failed)
	}
	return m, nil
}
