package job

import (
	"context"
	"fmt"

	"github.com/shardjob/shardjob/internal/docsubset"
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
	// YAMLNodeBudget is how many nodes expanding a job file's aliases and
	// merge keys may visit, on top of one per byte of the document: a
	// document whose merges fan out exponentially is refused as soon as
	// the walk exceeds it. (The stored document has neither.)
	YAMLNodeBudget = 100_000
)

// docKinds are the sentinels of docsubset's kinds of problem.
var docKinds = map[docsubset.ErrorKind]error{docsubset.TooLarge: ErrConfigTooLarge,
	docsubset.TooComplex: ErrConfigTooComplex, docsubset.KeyNotString: ErrUnknownKey}

// docError is a problem docsubset found, as a configError without a
// place.
func docError(e *docsubset.Error) *configError {
	return &configError{key: e.Key, kind: docKinds[e.Kind], subject: e.Subject, line: e.Line, detail: e.Detail, cause: e.Cause}
}

// parseYAMLDocument parses the stored document, of at most limit bytes,
// and returns its root node, or nil when the document is empty or null
// (see docsubset.Parse). The error has no place.
func parseYAMLDocument(ctx context.Context, data []byte, limit int) (*docsubset.Node, *configError) {
	root, err := docsubset.Parse(ctx, data, docsubset.Limits{Bytes: limit, Depth: MaxYAMLDepth})
	if err != nil {
		return nil, docError(err)
	}
	return root, nil
}

// tooLarge reports a value of n bytes against limit, naming what it is.
func tooLarge(key, what string, n, limit int) *configError {
	return &configError{key: key, kind: ErrConfigTooLarge, subject: fmt.Sprintf("%s is %s bytes", what, groupDigits(n)),
		detail: fmt.Sprintf("%s bytes over the limit of %s for a whole config document", groupDigits(n-limit), groupDigits(limit))}
}

// groupDigits writes n with thousands separators: 1,048,576.
func groupDigits(n int) string { return docsubset.GroupDigits(n) }

// quoteShort quotes s for an error message, cut to its first bytes when
// long, so that an oversized value does not make an oversized message.
func quoteShort(s string) string { return docsubset.QuoteShort(s) }
