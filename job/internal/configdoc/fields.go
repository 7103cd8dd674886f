package configdoc

import (
	"time"

	"github.com/shardjob/shardjob/internal/docsubset"
)

// The fields of a document, each made from the key, the sentinel of a
// bad value and the field it reads and sets (get): what a key's value
// decodes into, and how it is written. A field marked optional is left
// out of the document when unset, so that a document without it reads
// the same to instances that predate the key; the others are always
// written, zero values included.

// Encode writes c's document: every field of fields, in their order.
func Encode[T any](c *T, fields []Field[T]) []byte {
	var w docsubset.Writer
	for _, f := range fields {
		f.Encode(c, &w)
	}
	return w.Bytes()
}

// Text is a string field, or one of a string type (a policy's name).
func Text[T any, S ~string](key string, kind error, optional bool, get func(*T) *S) Field[T] {
	return Field[T]{Key: key, Kind: kind,
		Decode: func(c *T, n *docsubset.Node) error {
			var s string
			err := String(n, &s)
			*get(c) = S(s)
			return err
		},
		Encode: func(c *T, w *docsubset.Writer) {
			if optional {
				w.StringIfSet(key, string(*get(c)))
			} else {
				w.String(key, string(*get(c)))
			}
		}}
}

// List is a string field written as a string and read from a string or
// a list of strings (StringList); optional.
func List[T any](key string, kind error, get func(*T) *string) Field[T] {
	return Field[T]{Key: key, Kind: kind,
		Decode: func(c *T, n *docsubset.Node) error { return StringList(n, get(c)) },
		Encode: func(c *T, w *docsubset.Writer) { w.StringIfSet(key, *get(c)) }}
}

// Number is an integer field; an optional one is left out at 0.
func Number[T any](key string, kind error, optional bool, get func(*T) *int) Field[T] {
	return Field[T]{Key: key, Kind: kind,
		Decode: func(c *T, n *docsubset.Node) error { return Int(n, get(c)) },
		Encode: func(c *T, w *docsubset.Writer) {
			if v := *get(c); v != 0 || !optional {
				w.Int(key, v)
			}
		}}
}

// Flag is a boolean field; inverted, the document says the field's
// opposite (monitorExecution for Unmonitored), and a missing key leaves
// the field false.
func Flag[T any](key string, kind error, inverted bool, get func(*T) *bool) Field[T] {
	return Field[T]{Key: key, Kind: kind,
		Decode: func(c *T, n *docsubset.Node) error {
			if !inverted {
				return Bool(n, get(c))
			}
			v := true
			err := Bool(n, &v)
			*get(c) = !v
			return err
		},
		Encode: func(c *T, w *docsubset.Writer) { w.Bool(key, *get(c) != inverted) }}
}

// Span is a duration field, written as a Go duration ("5s"); an
// optional one is left out at 0.
func Span[T any](key string, kind error, optional bool, get func(*T) *time.Duration) Field[T] {
	return Field[T]{Key: key, Kind: kind,
		Decode: func(c *T, n *docsubset.Node) error { return Duration(n, get(c)) },
		Encode: func(c *T, w *docsubset.Writer) {
			if optional {
				w.StringIfSet(key, DurationText(*get(c)))
			} else {
				w.String(key, get(c).String())
			}
		}}
}

// Moment is a calendar time field, optional: the walk checks only that
// its value is a string (StringOnly), read once the job's zone is known
// (CalendarTime); it is written in RFC 3339.
func Moment[T any](key string, kind error, get func(*T) *time.Time) Field[T] {
	return Field[T]{Key: key, Kind: kind, Decode: StringOnly[T],
		Encode: func(c *T, w *docsubset.Writer) { w.StringIfSet(key, TimeText(*get(c))) }}
}

// RetryField is the retry mapping (DecodeRetry; unknownKey is the
// sentinel of its unknown keys), left out when zero.
func RetryField[T any](key string, kind, unknownKey error, get func(*T) *Retry) Field[T] {
	decode := func(n *docsubset.Node) (Retry, error) { return DecodeRetry(n, unknownKey) }
	return mapping(key, kind, get, decode, func(w *docsubset.Writer, p Retry) {
		w.Int("attempts", p.Attempts)
		w.StringIfSet("backoff", DurationText(p.Backoff))
		w.StringIfSet("maxBackoff", DurationText(p.MaxBackoff))
		if p.Jitter != 0 {
			w.Float("jitter", p.Jitter)
		}
	})
}

// AlertField is the alert mapping (DecodeAlert), left out when zero.
func AlertField[T any](key string, kind error, get func(*T) *Alert) Field[T] {
	return mapping(key, kind, get, DecodeAlert, func(w *docsubset.Writer, p Alert) {
		w.StringIfSet("late", DurationText(p.Late))
		w.StringIfSet("notRunFor", DurationText(p.NotRunFor))
	})
}

// mapping is a field holding a nested mapping, read by decode (which
// sets the field only when the whole mapping is good) and written by
// write, left out when zero.
func mapping[T any, P comparable](key string, kind error, get func(*T) *P, decode func(*docsubset.Node) (P, error),
	write func(*docsubset.Writer, P)) Field[T] {
	return Field[T]{Key: key, Kind: kind,
		Decode: func(c *T, n *docsubset.Node) error {
			p, err := decode(n)
			if err == nil {
				*get(c) = p
			}
			return err
		},
		Encode: func(c *T, w *docsubset.Writer) {
			var zero P
			if p := *get(c); p != zero {
				w.Map(key)
				write(w, p)
				w.End()
			}
		}}
}

// DurationText writes d as a Go duration, or "" for 0.
func DurationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// TimeText writes a calendar time (RFC 3339), or "" for the zero time.
func TimeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}
