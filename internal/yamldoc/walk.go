package yamldoc

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// walker visits a parsed document as a reader of it would, following
// every alias and merge key, and stops at the first limit it meets.
type walker struct {
	ctx      context.Context
	maxDepth int
	budget   int
	visited  int
	active   map[*yaml.Node]bool // anchored nodes being visited: an alias to one is a cycle
	err      *Error
}

// checkTree walks root with a budget derived from size, the length of
// the document in bytes. It reports an alias or merge key that refers to
// a node containing it, nesting deeper than lim.Depth, an expansion
// beyond the budget, or ctx ending.
func checkTree(ctx context.Context, root *yaml.Node, size int, lim Limits) *Error {
	w := &walker{ctx: ctx, maxDepth: lim.Depth, budget: lim.Budget + size, active: map[*yaml.Node]bool{}}
	w.walk(root, 0, nil)
	return w.err
}

// walk visits n at depth. mergeKey is the merge key whose value n is (or
// is an item of), nil otherwise. It returns false once a limit is met.
func (w *walker) walk(n *yaml.Node, depth int, mergeKey *yaml.Node) bool {
	if n == nil {
		return true
	}
	w.visited++
	if w.visited > w.budget {
		w.err = &Error{Kind: TooComplex, Line: n.Line,
			Subject: fmt.Sprintf("document expands beyond %s nodes through its aliases and merge keys", GroupDigits(w.budget))}
		return false
	}
	if w.visited%1024 == 0 && w.ctx != nil {
		if err := w.ctx.Err(); err != nil {
			w.err = &Error{Subject: "document", Detail: "decoding abandoned: " + err.Error(), Cause: err}
			return false
		}
	}
	if depth > w.maxDepth {
		w.err = &Error{Kind: TooComplex, Line: n.Line,
			Subject: fmt.Sprintf("document nests deeper than %d levels", w.maxDepth)}
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
				w.err = &Error{Kind: TooComplex,
					Subject: fmt.Sprintf("merge key at line %d refers to itself", mergeKey.Line),
					Detail:  fmt.Sprintf("*%s names &%s (line %d), which contains it", n.Value, t.Anchor, t.Line)}
			} else {
				w.err = &Error{Kind: TooComplex,
					Subject: fmt.Sprintf("alias *%s at line %d refers to itself", n.Value, n.Line),
					Detail:  fmt.Sprintf("it is inside &%s (line %d), which it names", t.Anchor, t.Line)}
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
