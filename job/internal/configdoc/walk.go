package configdoc

import (
	"fmt"
	"slices"
	"time"

	"github.com/shardjob/shardjob/internal/docsubset"
	"github.com/shardjob/shardjob/internal/suggest"
)

// Field is one key of a document decoding into a T (package job's
// configFields: the key, the sentinel of a bad value, the decoder that
// sets its field and the encoder that writes it; fields.go makes them).
type Field[T any] struct {
	Key    string
	Kind   error
	Decode func(c *T, n *docsubset.Node) error
	Encode func(c *T, w *docsubset.Writer)
}

// Problem is one problem Walk found, without whose document it is;
// package job makes its error of it.
type Problem struct {
	Key, Subject, Detail, Hint string
	// Suggestion is, for an unknown key, the known key probably meant.
	Suggestion string
	Line       int
	Kind       error // the specific sentinel; nil if none
	Cause      error
	// Doc is a problem with the mapping's keys themselves (a repeated
	// key), whose Kind says which sentinel applies; Kind is then nil.
	Doc *docsubset.Error
}

// Walked is what Walk read of a mapping.
type Walked struct {
	// Name is the value of the key "name", "" when it has none.
	Name  string
	Pairs []docsubset.Pair
	// Lines are the keys' lines; Bad the keys whose value was refused
	// (or that a misspelt key stands for).
	Lines map[string]int
	Bad   map[string]bool
	// Problems are in document order, the mapping's own first.
	Problems []Problem
	// NotMapping: n is no mapping, the one problem says so.
	NotMapping bool
}

// Walk decodes the pairs of mapping n into c with fields. The keys in
// extra are decoded by key, in document order (nil: accepted and
// ignored); any other key is unknown, wrapping unknownKey, with the
// nearest known key suggested.
func Walk[T any](c *T, n *docsubset.Node, fields []Field[T], extra []string, key func(k, v *docsubset.Node) error, unknownKey error) Walked {
	if n == nil || n.Kind != docsubset.MappingNode {
		p := Problem{Subject: "job", Detail: "must be a mapping of keys to values, got " + docsubset.KindName(n)}
		if n != nil {
			p.Line = n.Line
		}
		return Walked{NotMapping: true, Problems: []Problem{p}}
	}
	pairs, perrs := docsubset.Pairs(n)
	w := Walked{Pairs: pairs, Lines: map[string]int{}, Bad: map[string]bool{}}
	for _, p := range pairs {
		if v := p.Value; p.Key == "name" && v.Kind == docsubset.ScalarNode && v.Tag != "!!null" {
			w.Name = v.Value
		}
	}
	for _, e := range perrs {
		w.Problems = append(w.Problems, Problem{Key: e.Key, Subject: e.Subject, Line: e.Line, Detail: e.Detail, Cause: e.Cause, Doc: e})
	}
	known := make([]string, 0, len(fields)+len(extra))
	for _, f := range fields {
		known = append(known, f.Key)
	}
	known = append(known, extra...)
	for _, p := range pairs {
		line := p.KeyNode.Line
		w.Lines[p.Key] = line
		if slices.Contains(extra, p.Key) {
			if key == nil {
				continue
			}
			if err := key(p.KeyNode, p.Value); err != nil {
				w.Problems = append(w.Problems, Problem{Key: p.Key, Subject: p.Key, Line: line, Detail: err.Error(), Cause: err})
			}
			continue
		}
		i := slices.IndexFunc(fields, func(f Field[T]) bool { return f.Key == p.Key })
		if i < 0 {
			e := Problem{Key: p.Key, Kind: unknownKey, Subject: "unknown key " + docsubset.QuoteShort(p.Key), Line: line}
			if s := suggest.Nearest(p.Key, known); s != "" {
				e.Suggestion, e.Hint = s, fmt.Sprintf("did you mean %q?", s)
				if !slices.ContainsFunc(pairs, func(q docsubset.Pair) bool { return q.Key == s }) {
					// The misspelt key stands for this one: it is not
					// also reported as missing.
					w.Bad[s] = true
				}
			}
			w.Problems = append(w.Problems, e)
			continue
		}
		if err := fields[i].Decode(c, p.Value); err != nil {
			w.Bad[p.Key] = true
			w.Problems = append(w.Problems, Problem{Key: p.Key, Kind: fields[i].Kind, Subject: p.Key, Line: line,
				Detail: err.Error(), Cause: err})
		}
	}
	return w
}

// Times reads the calendar times of the keys in times into their fields,
// in loc, the job's zone (which the document may give after them): a
// value that is no calendar time is a Problem, its key then Bad, unless
// the key's value was refused already.
func (w *Walked) Times(loc *time.Location, times map[string]*time.Time) {
	for _, p := range w.Pairs {
		out := times[p.Key]
		if out == nil {
			continue
		}
		t, ok, err := CalendarTime(p.Value, loc)
		if ok {
			*out = t
		} else if err != nil && !w.Bad[p.Key] {
			w.Bad[p.Key] = true
			w.Problems = append(w.Problems, Problem{Key: p.Key, Subject: p.Key, Line: p.KeyNode.Line, Detail: err.Error(), Cause: err})
		}
	}
}
