package job

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/regcenter"
)

// Limits on configuration documents. A document beyond them is refused
// before any of it is used, with an error wrapping ErrInvalidConfig and
// ErrConfigTooLarge or ErrConfigTooComplex; an instance that reads such a
// document from the registry logs the rejection and keeps its last good
// config.
const (
	// MaxConfigBytes is the largest encoded config document (see
	// Config.Encode), and so the largest value of any one field: it is the
	// default limit of a registry node (regcenter.DefaultMaxNodeBytes).
	MaxConfigBytes = regcenter.DefaultMaxNodeBytes
	// MaxDocumentBytes is the largest YAML document DecodeConfig parses.
	// It is larger than MaxConfigBytes so that a config too large to store
	// is answered with the field that is too large and by how much.
	MaxDocumentBytes = 4 << 20
	// MaxFileBytes is the largest job file Load and LoadFile read.
	MaxFileBytes = 64 << 20
	// MaxYAMLDepth is how deeply a document may nest, counting each
	// mapping, list, merge key and alias followed as one level.
	MaxYAMLDepth = 64
	// YAMLNodeBudget is how many nodes expanding a document's aliases and
	// merge keys may visit, on top of one per byte of the document: a
	// document whose merges fan out exponentially is refused as soon as
	// the walk exceeds it.
	YAMLNodeBudget = 100_000
)

// yamlWalk visits a parsed document as a reader of it would, following
// every alias and merge key, and stops at the first limit it meets.
type yamlWalk struct {
	ctx     context.Context
	budget  int
	visited int
	active  map[*yaml.Node]bool // anchored nodes being visited: an alias to one is a cycle
	err     *configError
}

// checkYAMLTree walks root with a budget derived from size, the length of
// the document in bytes. It reports an alias or merge key that refers to
// a node containing it, nesting deeper than MaxYAMLDepth, an expansion
// beyond the budget, or ctx ending. The error has no place.
func checkYAMLTree(ctx context.Context, root *yaml.Node, size int) *configError {
	w := &yamlWalk{ctx: ctx, budget: YAMLNodeBudget + size, active: map[*yaml.Node]bool{}}
	w.walk(root, 0, nil)
	return w.err
}

// walk visits n at depth. mergeKey is the merge key whose value n is (or
// is an item of), nil otherwise. It returns false once a limit is met.
func (w *yamlWalk) walk(n *yaml.Node, depth int, mergeKey *yaml.Node) bool {
	if n == nil {
		return true
	}
	w.visited++
	if w.visited > w.budget {
		w.err = &configError{kind: ErrConfigTooComplex, line: n.Line,
			subject: fmt.Sprintf("document expands beyond %s nodes through its aliases and merge keys", groupDigits(w.budget))}
		return false
	}
	if w.visited%1024 == 0 && w.ctx != nil {
		if err := w.ctx.Err(); err != nil {
			w.err = &configError{subject: "document", detail: "decoding abandoned: " + err.Error(), cause: err}
			return false
		}
	}
	if depth > MaxYAMLDepth {
		w.err = &configError{kind: ErrConfigTooComplex, line: n.Line,
			subject: fmt.Sprintf("document nests deeper than %d levels", MaxYAMLDepth)}
		return false
	}
	switch n.Kind {
	case yaml.AliasNode:
		t := n.Alias
		if t == nil {
			return true
		}
		if w.active[t] {
			// The line is part of the subject: "merge key at line 2 refers
			// to itself" reads better than a line before the verb.
			if mergeKey != nil {
				w.err = &configError{kind: ErrConfigTooComplex,
					subject: fmt.Sprintf("merge key at line %d refers to itself", mergeKey.Line),
					detail:  fmt.Sprintf("*%s names &%s (line %d), which contains it", n.Value, t.Anchor, t.Line)}
			} else {
				w.err = &configError{kind: ErrConfigTooComplex,
					subject: fmt.Sprintf("alias *%s at line %d refers to itself", n.Value, n.Line),
					detail:  fmt.Sprintf("it is inside &%s (line %d), which it names", t.Anchor, t.Line)}
			}
			return false
		}
		return w.walk(t, depth+1, mergeKey)
	case yaml.MappingNode, yaml.SequenceNode, yaml.DocumentNode:
		if n.Anchor != "" {
			w.active[n] = true
			defer delete(w.active, n)
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if !w.walk(k, depth+1, nil) {
					return false
				}
				var mk *yaml.Node
				if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
					mk = k
				}
				if !w.walk(v, depth+1, mk) {
					return false
				}
			}
			return true
		}
		for _, c := range n.Content {
			// The items of a merge key's list are merged too.
			if !w.walk(c, depth+1, mergeKey) {
				return false
			}
		}
	}
	return true
}

// checkDocumentSize refuses a document longer than limit before it is
// parsed. The error has no place.
func checkDocumentSize(data []byte, limit int) *configError {
	if len(data) <= limit {
		return nil
	}
	return &configError{kind: ErrConfigTooLarge, subject: fmt.Sprintf("document is %s bytes", groupDigits(len(data))),
		detail: fmt.Sprintf("%s bytes over the limit of %s", groupDigits(len(data)-limit), groupDigits(limit))}
}

// tooLarge reports a value of n bytes against limit, naming what it is.
func tooLarge(key, what string, n, limit int) *configError {
	return &configError{key: key, kind: ErrConfigTooLarge, subject: fmt.Sprintf("%s is %s bytes", what, groupDigits(n)),
		detail: fmt.Sprintf("%s bytes over the limit of %s for a whole config document", groupDigits(n-limit), groupDigits(limit))}
}

// groupDigits writes n with thousands separators: 1,048,576.
func groupDigits(n int) string {
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

// quoteShort quotes s for an error message, cut to its first bytes when
// long, so that an oversized value does not make an oversized message.
func quoteShort(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%s bytes)", strconv.Quote(s[:cut]), groupDigits(len(s)))
}

// cutShort is quoteShort without the quotes.
func cutShort(s string) string {
	if len(s) <= 64 {
		return s
	}
	q := quoteShort(s)
	return q[1:strings.LastIndex(q, `"`)] + q[strings.LastIndex(q, `"`)+1:]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
