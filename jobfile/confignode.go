package jobfile

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/internal/docsubset"
	"github.com/shardjob/shardjob/internal/yamldoc"
	"github.com/shardjob/shardjob/job"
)

// A job's mapping in a YAML job file, decoded as the stored config
// document is: the yaml/v3 tree, its aliases and merge keys followed, is
// read into internal/docsubset's tree, which job.DecodeConfigTree
// decodes with the document's own decoder, so that a job file and the
// stored document cannot disagree. Package job links no YAML library.

// NodeOptions say how DecodeConfigNode reads a job's mapping that is
// part of a larger document, such as an entry of a job file's jobs: list.
type NodeOptions struct {
	// Place names the job in errors, given its name ("" when it has
	// none), as a job file does with `jobs[2] "orders-sync"`. nil names
	// it as job.DecodeConfig does: `job "orders-sync"`.
	Place func(name string) string
	// Keys are keys the mapping may have besides the Config's (a job
	// file's handler, type, ...); the "did you mean" of an unknown key
	// considers them too.
	Keys []string
	// Key decodes one of Keys: it is called with the key's node and its
	// value, in document order. Its error is reported with the job's
	// place, the key and its line. nil: those keys are accepted and
	// ignored.
	Key func(key, value *yaml.Node) error
}

// DecodeConfigNode decodes and validates one job's mapping n, a node of a
// larger YAML document, with the decoder job.DecodeConfig uses: the same
// keys and values, as strictly (an unknown key is job.ErrUnknownKey,
// naming its line and, for a near miss, the key probably meant), and the
// same checks. Its keys besides the Config's are o's. Every problem is
// reported, in one error whose Unwrap() []error returns them, each
// wrapping job.ErrInvalidConfig and where one applies a specific
// sentinel; on error the Config is the zero value.
//
// n should come from a document read within the limits job.DecodeConfig
// applies (job.MaxYAMLDepth, job.YAMLNodeBudget): merge keys are followed
// again here, bounded in depth only.
func DecodeConfigNode(n *yaml.Node, o NodeOptions) (job.Config, error) {
	t := treeOf{orig: map[*docsubset.Node]*yaml.Node{}}
	to := job.TreeOptions{Place: o.Place, Keys: o.Keys}
	if o.Key != nil {
		to.Key = func(k, v *docsubset.Node) error { return o.Key(t.orig[k], t.orig[v]) }
	}
	return job.DecodeConfigTree(t.node(n, 0), to)
}

// treeOf reads a yaml/v3 tree into docsubset's, remembering the node
// each of the top mapping's keys and values came from.
type treeOf struct {
	orig map[*docsubset.Node]*yaml.Node
}

// node returns y's tree at depth, aliases followed and each mapping's
// merge keys expanded (yamldoc.Pairs), their problems kept in
// docsubset.Node.Errs.
func (t treeOf) node(y *yaml.Node, depth int) *docsubset.Node {
	y = yamldoc.Resolve(y)
	if y == nil {
		return nil
	}
	n := &docsubset.Node{Line: y.Line}
	if depth > job.MaxYAMLDepth {
		n.Kind = docsubset.MappingNode
		n.Errs = []*docsubset.Error{{Kind: docsubset.TooComplex, Line: y.Line,
			Subject: fmt.Sprintf("document nests deeper than %d levels", job.MaxYAMLDepth)}}
		return n
	}
	switch y.Kind {
	case yaml.MappingNode:
		n.Kind = docsubset.MappingNode
		pairs, errs := yamldoc.Pairs(y, job.MaxYAMLDepth)
		for _, e := range errs {
			n.Errs = append(n.Errs, &docsubset.Error{Kind: subsetKind(e.Kind), Key: e.Key, Subject: e.Subject,
				Line: e.Line, Detail: e.Detail, Cause: e.Cause})
		}
		for _, p := range pairs {
			k, v := t.node(p.KeyNode, depth+1), t.node(p.Value, depth+1)
			if depth == 0 {
				t.orig[k], t.orig[v] = p.KeyNode, p.Value
			}
			n.Content = append(n.Content, k, v)
		}
	case yaml.SequenceNode:
		n.Kind = docsubset.SequenceNode
		for _, c := range y.Content {
			n.Content = append(n.Content, t.node(c, depth+1))
		}
	default:
		n.Kind, n.Tag, n.Value = docsubset.ScalarNode, y.ShortTag(), y.Value
	}
	return n
}

// subsetKind is yamldoc's kind of problem as docsubset's.
func subsetKind(k yamldoc.Kind) docsubset.ErrorKind {
	switch k {
	case yamldoc.TooLarge:
		return docsubset.TooLarge
	case yamldoc.TooComplex:
		return docsubset.TooComplex
	case yamldoc.KeyNotString:
		return docsubset.KeyNotString
	}
	return docsubset.Invalid
}
