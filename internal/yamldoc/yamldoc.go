// Package yamldoc reads YAML documents that may be hostile within limits:
// one document, of bounded size, walked once with every alias and merge
// key followed before any of it is used, so that a self-referring merge,
// deep nesting or an exponential fan-out of aliases is refused at once.
// It is shared by the decoders of the stored config document (package
// job) and of job files (package jobfile), which turn its errors into
// their own.
package yamldoc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/internal/docsubset"
)

// Limits bound a document.
type Limits struct {
	// Bytes is the largest document, in bytes.
	Bytes int
	// Depth is how deeply a document may nest, counting each mapping,
	// list, merge key and alias followed as one level.
	Depth int
	// Budget is how many nodes expanding a document's aliases and merge
	// keys may visit, on top of one per byte of the document.
	Budget int
}

// Kind says what an Error is about: docsubset's kinds, so that a problem
// reads and matches the same whichever reader found it.
type Kind = docsubset.ErrorKind

// The kinds of Error.
const (
	// Invalid is a document that cannot be read as it is: malformed
	// YAML, more than one document, a repeated key, a bad merge.
	Invalid = docsubset.Invalid
	// TooLarge is a document longer than Limits.Bytes.
	TooLarge = docsubset.TooLarge
	// TooComplex is a document beyond Limits.Depth or Limits.Budget, or
	// with an alias or merge key that refers to a node containing it.
	TooComplex = docsubset.TooComplex
	// KeyNotString is a mapping key that is not a string.
	KeyNotString = docsubset.KeyNotString
)

// Error is one problem with a document (docsubset.Error). It reads
// "<subject>[ at line N][: <detail>]"; the reader adds whose document it
// is. Cause is the parser's error, or the context's; nil if none.
type Error = docsubset.Error

// Message is how a problem with a document reads (docsubset.Message).
func Message(place, subject string, line int, detail, hint string) string {
	return docsubset.Message(place, subject, line, detail, hint)
}

// Parse parses exactly one YAML document within lim and returns its root
// node, or nil when the document is empty or null. The document is
// walked once with every alias and merge key followed, abandoned when ctx
// ends, so a node it returns can be read without further bounds.
func Parse(ctx context.Context, data []byte, lim Limits) (*yaml.Node, *Error) {
	if len(data) > lim.Bytes {
		return nil, &Error{Kind: TooLarge, Subject: fmt.Sprintf("document is %s bytes", GroupDigits(len(data))),
			Detail: fmt.Sprintf("%s bytes over the limit of %s", GroupDigits(len(data)-lim.Bytes), GroupDigits(lim.Bytes))}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, &Error{Subject: "invalid YAML", Detail: err.Error(), Cause: err}
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, &Error{Subject: "invalid YAML", Detail: err.Error(), Cause: err}
		}
		return nil, &Error{Subject: "invalid YAML", Line: next.Line, Detail: "more than one document"}
	}
	if err := checkTree(ctx, &doc, len(data), lim); err != nil {
		return nil, err
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, nil
		}
		root = root.Content[0]
	}
	root = Resolve(root)
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, nil
	}
	return root, nil
}

// Resolve follows alias nodes to the node they name.
func Resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// IsNull reports whether n is absent or a null scalar.
func IsNull(n *yaml.Node) bool {
	n = Resolve(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// Pair is one key and value of a mapping node.
type Pair struct {
	Key     string
	KeyNode *yaml.Node
	Value   *yaml.Node
}

// Pairs returns the pairs of mapping node n, keys as written, including
// those brought in by merge keys ("<<: *defaults"), which explicit keys
// override. A repeated or non-string key is reported. maxDepth bounds
// merges within merges, so that a document Parse did not walk cannot
// recurse without end.
func Pairs(n *yaml.Node, maxDepth int) ([]Pair, []*Error) {
	return pairsAt(n, 0, maxDepth)
}

func pairsAt(n *yaml.Node, depth, maxDepth int) ([]Pair, []*Error) {
	var pairs, merged []Pair
	var errs []*Error
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := Resolve(n.Content[i]), n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			m, merrs := mergedPairs(v, depth+1, maxDepth)
			merged = append(merged, m...)
			errs = append(errs, merrs...)
			continue
		}
		if k.Kind != yaml.ScalarNode {
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
	for _, p := range merged {
		if _, ok := seen[p.Key]; !ok {
			seen[p.Key] = p.KeyNode.Line
			pairs = append(pairs, p)
		}
	}
	return pairs, errs
}

// mergedPairs returns the pairs a merge key brings in: those of a mapping,
// or of a list of mappings with earlier ones taking precedence.
func mergedPairs(v *yaml.Node, depth, maxDepth int) ([]Pair, []*Error) {
	v = Resolve(v)
	if depth > maxDepth {
		return nil, []*Error{{Kind: TooComplex, Subject: "merge key", Line: v.Line,
			Detail: fmt.Sprintf("nests deeper than %d levels", maxDepth)}}
	}
	switch v.Kind {
	case yaml.MappingNode:
		return pairsAt(v, depth, maxDepth)
	case yaml.SequenceNode:
		var pairs []Pair
		var errs []*Error
		seen := map[string]bool{}
		for _, item := range v.Content {
			if item = Resolve(item); item.Kind != yaml.MappingNode {
				errs = append(errs, &Error{Subject: "merge key", Line: item.Line,
					Detail: "may only merge mappings, got " + KindName(item)})
				continue
			}
			p, perrs := mergedPairs(item, depth+1, maxDepth)
			errs = append(errs, perrs...)
			for _, pair := range p {
				if !seen[pair.Key] {
					seen[pair.Key] = true
					pairs = append(pairs, pair)
				}
			}
		}
		return pairs, errs
	}
	return nil, []*Error{{Subject: "merge key", Line: v.Line,
		Detail: "may only merge a mapping or a list of mappings, got " + KindName(v)}}
}

// KindName describes a node for error messages: "a mapping", "a list",
// "no value", `the string "x"`, or a scalar as written.
func KindName(n *yaml.Node) string {
	n = Resolve(n)
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.ShortTag() == "!!null":
		return "no value"
	case n.ShortTag() == "!!str":
		return "the string " + QuoteShort(n.Value)
	default:
		if s := QuoteShort(n.Value); len(s) != len(n.Value)+2 {
			return s // cut short
		}
		return n.Value
	}
}

// GroupDigits writes n with thousands separators (docsubset.GroupDigits).
func GroupDigits(n int) string { return docsubset.GroupDigits(n) }

// QuoteShort quotes s for an error message, cut short when long
// (docsubset.QuoteShort).
func QuoteShort(s string) string { return docsubset.QuoteShort(s) }

// String decodes a scalar as a string, as job's and jobfile's decoders
// both do: numbers and booleans are taken as written; null and anything
// but a scalar are errors.
func String(n *yaml.Node, out *string) error {
	n = Resolve(n)
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("must be a string, got %s", KindName(n))
	}
	if n.ShortTag() == "!!null" {
		return errors.New(`has no value (write "" for an empty string)`)
	}
	return n.Decode(out)
}
