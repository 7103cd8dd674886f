// Package docsubset reads and writes the small part of YAML that the
// stored config document uses, without a YAML library, so that package
// job links none.
//
// It owns:
//
//   - the tree a document reads into (Node, node.go): block mappings, block
//     lists, scalars with the tag YAML 1.2's core schema (as go.yaml.in/yaml/v3
//     resolves it) gives a plain scalar, and each node's line;
//   - the reader (parse.go): block mappings and lists nested by spaces,
//     plain, single- and double-quoted scalars on one line, literal block
//     scalars (|), comments, a "---" start and a "..." end marker, the
//     !!binary tag the writer puts on text that is not UTF-8, and flow
//     collections of scalars on one line ([sat, sun], {attempts: 3}), as
//     an operator writes a short list or policy. Anything else — anchors,
//     aliases, other tags, a flow collection nested or over several lines,
//     folded scalars,
//     quoted scalars over several lines, several documents, directives,
//     tabs as indentation, a document too large or nesting too deep — is
//     refused with an Error naming the line and what is not supported;
//   - the writer (emit.go): a block mapping of scalars and one level of
//     nested mappings, each scalar written in the style and with the bytes
//     go.yaml.in/yaml/v3's Marshal gives it (its tests compare the two);
//   - the problems of a document (Error, Message, Pairs) and how a value is
//     named in them (KindName, QuoteShort, GroupDigits), shared with
//     internal/yamldoc, which reads whole YAML for job files.
//
// The lock discipline: none; it holds no state beyond a call.
//
// It may import the standard library only; tests may import
// go.yaml.in/yaml/v3 to compare with it. It starts nothing.
package docsubset
