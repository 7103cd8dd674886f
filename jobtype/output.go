package jobtype

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/shardjob/shardjob/job"
)

// Output returns what a program wrote (a script's standard output, an
// HTTP response's body) as the run's output for job.RecordOutput: the
// bytes themselves when they are one JSON value of at most
// job.MaxOutputSize bytes, else a JSON string of the text, its trailing
// newlines removed, cut to fit in job.MaxOutputSize bytes of JSON. cut
// says whether text is only a part of what was written: it is then never
// taken as JSON. With tail the string keeps the end of the text, else its
// start. Empty text (or only newlines) gives nil: no output.
//
// The JSON string is encoded as job.RecordOutput encodes, without
// escaping <, > and &; bytes that are not UTF-8 become U+FFFD.
func Output(text []byte, cut, tail bool) json.RawMessage {
	if !cut && len(text) <= job.MaxOutputSize && json.Valid(text) {
		return json.RawMessage(bytes.TrimSpace(text))
	}
	text = bytes.TrimRight(text, "\r\n")
	if len(text) == 0 {
		return nil
	}
	// The most of text whose JSON string fits: escapes make the string
	// longer than the text by an amount that depends on the text, so the
	// length is searched for.
	n := min(len(text), job.MaxOutputSize-2)
	if enc := quote(part(text, n, tail)); len(enc) <= job.MaxOutputSize {
		return enc
	}
	lo, hi := 0, n // quote(part(lo)) fits, quote(part(hi)) does not
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if len(quote(part(text, mid, tail))) <= job.MaxOutputSize {
			lo = mid
		} else {
			hi = mid
		}
	}
	return quote(part(text, lo, tail))
}

// part returns about n bytes of text, its end with tail, else its start,
// cut at the edge of a rune (so perhaps fewer).
func part(text []byte, n int, tail bool) []byte {
	if tail {
		i := len(text) - n
		for i < len(text) && !utf8.RuneStart(text[i]) {
			i++
		}
		return text[i:]
	}
	i := n
	for i > 0 && i < len(text) && !utf8.RuneStart(text[i]) {
		i--
	}
	return text[:i]
}

// quote encodes s as a JSON string without HTML escaping.
func quote(s []byte) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(s)); err != nil {
		panic("jobtype: encoding a string: " + err.Error()) // a string always encodes
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
