package docsubset

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is a node's kind.
type Kind int

// The kinds of node.
const (
	// ScalarNode is a value written as text.
	ScalarNode Kind = iota + 1
	// MappingNode is a mapping; Content holds its keys and values in turn.
	MappingNode
	// SequenceNode is a list; Content holds its items.
	SequenceNode
)

// Node is one node of a document.
type Node struct {
	Kind Kind
	// Tag is a scalar's resolved tag: "!!str", "!!int", "!!float",
	// "!!bool", "!!null", "!!timestamp" or "!!binary" (Value then holds
	// the base64 text, which String decodes). Quoted and block scalars
	// are "!!str".
	Tag   string
	Value string
	// Line is the node's line, from 1.
	Line    int
	Content []*Node
	// Errs are problems found with a mapping's keys when it was built
	// from another tree (see Pairs); nil for a node Parse returns.
	Errs []*Error
}

// ShortTag returns n's tag, "!!map" or "!!seq" for a collection.
func (n *Node) ShortTag() string {
	switch n.Kind {
	case MappingNode:
		return "!!map"
	case SequenceNode:
		return "!!seq"
	}
	return n.Tag
}

// IsNull reports whether n is absent or a null scalar.
func IsNull(n *Node) bool {
	return n == nil || n.Kind == ScalarNode && n.Tag == "!!null"
}

// ErrorKind says what an Error is about.
type ErrorKind int

const (
	// Invalid is a document that cannot be read as it is: malformed
	// YAML, YAML beyond the subset, a repeated key.
	Invalid ErrorKind = iota
	// TooLarge is a document longer than Limits.Bytes.
	TooLarge
	// TooComplex is a document nesting deeper than Limits.Depth.
	TooComplex
	// KeyNotString is a mapping key that is not a string.
	KeyNotString
)

// Error is one problem with a document. It reads
// "<subject>[ at line N][: <detail>]"; the reader adds whose document it
// is.
type Error struct {
	Kind    ErrorKind
	Key     string // the key concerned, "" if none
	Subject string // what: "invalid YAML", `key "x"`
	Line    int    // 0 if unknown
	Detail  string
	Cause   error // the context's error, or another reader's; nil if none
}

func (e *Error) Error() string { return Message("", e.Subject, e.Line, e.Detail, "") }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Message is how a problem with a document reads, the same wherever it is
// found: "<place>: <subject>[ at line N][: <detail>][ (<hint>)]", each part
// left out when empty (line when 0).
func Message(place, subject string, line int, detail, hint string) string {
	var b strings.Builder
	if place != "" {
		b.WriteString(place)
		b.WriteString(": ")
	}
	b.WriteString(subject)
	if line > 0 {
		fmt.Fprintf(&b, " at line %d", line)
	}
	if detail != "" {
		b.WriteString(": ")
		b.WriteString(detail)
	}
	if hint != "" {
		b.WriteString(" (")
		b.WriteString(hint)
		b.WriteString(")")
	}
	return b.String()
}

// Pair is one key and value of a mapping node.
type Pair struct {
	Key     string
	KeyNode *Node
	Value   *Node
}

// Pairs returns the pairs of mapping node n, keys as written, after the
// problems n was built with (Node.Errs). A repeated or non-string key is
// reported as internal/yamldoc reports it.
func Pairs(n *Node) ([]Pair, []*Error) {
	var pairs []Pair
	errs := append([]*Error(nil), n.Errs...)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != ScalarNode {
			errs = append(errs, &Error{Kind: KeyNotString, Subject: "key", Line: k.Line,
				Detail: "must be a string, got " + KindName(k)})
			continue
		}
		if first, dup := seen[k.Value]; dup {
			errs = append(errs, &Error{Key: k.Value, Subject: fmt.Sprintf("key %q", k.Value), Line: k.Line,
				Detail: fmt.Sprintf("repeats the key at line %d", first)})
			continue
		}
		seen[k.Value] = k.Line
		pairs = append(pairs, Pair{Key: k.Value, KeyNode: k, Value: v})
	}
	return pairs, errs
}

// KindName describes a node for error messages: "a mapping", "a list",
// "no value", `the string "x"`, or a scalar as written.
func KindName(n *Node) string {
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == MappingNode:
		return "a mapping"
	case n.Kind == SequenceNode:
		return "a list"
	case n.Tag == "!!null":
		return "no value"
	case n.Tag == "!!str":
		return "the string " + QuoteShort(n.Value)
	default:
		if s := QuoteShort(n.Value); len(s) != len(n.Value)+2 {
			return s // cut short
		}
		return n.Value
	}
}

// GroupDigits writes n with thousands separators: 1,048,576.
func GroupDigits(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// QuoteShort quotes s for an error message, cut to its first bytes when
// long, so that an oversized value does not make an oversized message.
func QuoteShort(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not the start of a UTF-8 sequence
		cut--
	}
	return fmt.Sprintf("%s… (%s bytes)", strconv.Quote(s[:cut]), GroupDigits(len(s)))
}

// CutShort is QuoteShort without the quotes.
func CutShort(s string) string {
	if len(s) <= 64 {
		return s
	}
	q := QuoteShort(s)
	return q[1:strings.LastIndex(q, `"`)] + q[strings.LastIndex(q, `"`)+1:]
}

// String decodes a scalar as a string: numbers and booleans are taken as
// written; null and anything but a scalar are errors.
func String(n *Node, out *string) error {
	if n.Kind != ScalarNode {
		return fmt.Errorf("must be a string, got %s", KindName(n))
	}
	if n.Tag == "!!null" {
		return errors.New(`has no value (write "" for an empty string)`)
	}
	if n.Tag == "!!binary" {
		b, err := base64.StdEncoding.DecodeString(n.Value)
		if err != nil {
			return err
		}
		*out = string(b)
		return nil
	}
	*out = n.Value
	return nil
}
