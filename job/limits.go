package job

import (
	"context"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/internal/suggest"
	"github.com/shardjob/shardjob/internal/yamldoc"
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
	// MaxYAMLDepth is how deeply a document may nest, counting each
	// mapping, list, merge key and alias followed as one level.
	MaxYAMLDepth = 64
	// YAMLNodeBudget is how many nodes expanding a document's aliases and
	// merge keys may visit, on top of one per byte of the document: a
	// document whose merges fan out exponentially is refused as soon as
	// the walk exceeds it.
	YAMLNodeBudget = 100_000
)

// yamlLimits are the limits of a document of at most size bytes.
func yamlLimits(size int) yamldoc.Limits {
	return yamldoc.Limits{Bytes: size, Depth: MaxYAMLDepth, Budget: YAMLNodeBudget}
}

// docError is a problem yamldoc found, as a configError without a place.
func docError(e *yamldoc.Error) *configError {
	ce := &configError{key: e.Key, subject: e.Subject, line: e.Line, detail: e.Detail, cause: e.Cause}
	switch e.Kind {
	case yamldoc.TooLarge:
		ce.kind = ErrConfigTooLarge
	case yamldoc.TooComplex:
		ce.kind = ErrConfigTooComplex
	case yamldoc.KeyNotString:
		ce.kind = ErrUnknownKey
	}
	return ce
}

// parseYAMLDocument parses exactly one YAML document of at most limit
// bytes and returns its root node, or nil when the document is empty or
// null (see yamldoc.Parse). The error has no place.
func parseYAMLDocument(ctx context.Context, data []byte, limit int) (*yaml.Node, *configError) {
	root, err := yamldoc.Parse(ctx, data, yamlLimits(limit))
	if err != nil {
		return nil, docError(err)
	}
	return root, nil
}

// mappingPairs returns the pairs of mapping node n, merge keys followed
// (see yamldoc.Pairs). The errors have no place.
func mappingPairs(n *yaml.Node) ([]yamldoc.Pair, []*configError) {
	pairs, errs := yamldoc.Pairs(n, MaxYAMLDepth)
	var cerrs []*configError
	for _, e := range errs {
		cerrs = append(cerrs, docError(e))
	}
	return pairs, cerrs
}

// unknownKeyError reports p's key as unknown at place, suggesting the
// nearest of known when it is a near miss.
func unknownKeyError(place string, p yamldoc.Pair, known []string) *configError {
	e := &configError{place: place, key: p.Key, kind: ErrUnknownKey,
		subject: "unknown key " + quoteShort(p.Key), line: p.KeyNode.Line}
	if s := suggest.Nearest(p.Key, known); s != "" {
		e.suggestion = s
		e.hint = fmt.Sprintf("did you mean %q?", s)
	}
	return e
}

// tooLarge reports a value of n bytes against limit, naming what it is.
func tooLarge(key, what string, n, limit int) *configError {
	return &configError{key: key, kind: ErrConfigTooLarge, subject: fmt.Sprintf("%s is %s bytes", what, groupDigits(n)),
		detail: fmt.Sprintf("%s bytes over the limit of %s for a whole config document", groupDigits(n-limit), groupDigits(limit))}
}

// groupDigits writes n with thousands separators: 1,048,576.
func groupDigits(n int) string { return yamldoc.GroupDigits(n) }

// quoteShort quotes s for an error message, cut to its first bytes when
// long, so that an oversized value does not make an oversized message.
func quoteShort(s string) string { return yamldoc.QuoteShort(s) }

// cutShort is quoteShort without the quotes.
func cutShort(s string) string {
	if len(s) <= 64 {
		return s
	}
	q := quoteShort(s)
	return q[1:strings.LastIndex(q, `"`)] + q[strings.LastIndex(q, `"`)+1:]
}
