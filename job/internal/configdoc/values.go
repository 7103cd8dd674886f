package configdoc

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/shardjob/shardjob/internal/docsubset"
)

// String decodes a scalar as a string (docsubset.String).
func String(n *docsubset.Node, out *string) error { return docsubset.String(n, out) }

// StringOnly is the decoder of a field whose value must be a string and
// is read later (a calendar time, read once the time zone is known: see
// CalendarTime).
func StringOnly[T any](_ *T, n *docsubset.Node) error {
	var s string
	return String(n, &s)
}

// StringList decodes a string, or a list of strings joined with commas.
func StringList(n *docsubset.Node, out *string) error {
	if n.Kind != docsubset.SequenceNode {
		return String(n, out)
	}
	parts := make([]string, 0, len(n.Content))
	for i, e := range n.Content {
		var s string
		if err := String(e, &s); err != nil {
			return fmt.Errorf("entry %d %w", i+1, err)
		}
		if strings.Contains(s, ",") {
			return fmt.Errorf("entry %d %s has a comma: one entry per list item", i+1, docsubset.QuoteShort(s))
		}
		parts = append(parts, s)
	}
	*out = strings.Join(parts, ",")
	return nil
}

// Bool decodes a YAML boolean; a quoted "true" is an error.
func Bool(n *docsubset.Node, out *bool) error {
	if n.Kind != docsubset.ScalarNode || n.Tag != "!!bool" {
		return fmt.Errorf("must be true or false, got %s", docsubset.KindName(n))
	}
	*out = n.Value[0] == 't' || n.Value[0] == 'T'
	return nil
}

// Int decodes a YAML integer that fits an int.
func Int(n *docsubset.Node, out *int) error {
	if n.Kind != docsubset.ScalarNode || n.Tag != "!!int" {
		return fmt.Errorf("must be an integer, got %s", docsubset.KindName(n))
	}
	v, ok := docsubset.Int(n)
	if !ok {
		return fmt.Errorf("%s is out of range", n.Value)
	}
	*out = v
	return nil
}

// Duration decodes a Go duration string such as "5s" or "1m30s"; a bare
// 0 is accepted too.
func Duration(n *docsubset.Node, out *time.Duration) error {
	if n.Kind != docsubset.ScalarNode || n.Tag == "!!null" {
		return fmt.Errorf(`must be a duration such as "5s", got %s`, docsubset.KindName(n))
	}
	d, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return fmt.Errorf(`%s is not a duration such as "5s" or "1m30s"`, docsubset.QuoteShort(n.Value))
	}
	*out = d
	return nil
}

// Fraction decodes a YAML number (an integer or a float), finite.
func Fraction(n *docsubset.Node, out *float64) error {
	if n.Kind != docsubset.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") {
		return fmt.Errorf("must be a number such as 0.2, got %s", docsubset.KindName(n))
	}
	f, ok := docsubset.Float(n)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%s is not a number from 0 to 1", docsubset.QuoteShort(n.Value))
	}
	*out = f
	return nil
}
