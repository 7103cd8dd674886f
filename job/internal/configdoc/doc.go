// Package configdoc decodes the values of the config document stored in
// a job's config node (and of a job file's jobs, read into the same
// tree), over internal/docsubset's tree: a string, a list of strings, a
// boolean, an integer, a duration, a fraction, and the retry and alert
// mappings, each strictly and with the error text package job reports
// with the key and its line; and writes the document from the same
// fields. Package job keeps the document's keys (its configFields table,
// which field each sets); the checks of a Config are
// job/internal/configcheck's.
//
// It owns:
//
//   - the decoders of a value (values.go): String, StringList, Bool, Int,
//     Duration, Fraction;
//   - the nested mappings (nested.go): Retry and Alert, field for field
//     job's RetryPolicy and AlertPolicy, decoded by DecodeRetry and
//     DecodeAlert with their unknown keys named;
//   - PlainName (nested.go), whether the writer writes a name as it is;
//   - the fields of a document (fields.go): Text, List, Number, Flag,
//     Span, Moment, RetryField and AlertField make a Field, its decoder
//     and its encoder, from the field it reads and sets; Encode writes a
//     document, every field in the table's order;
//   - the walk of a document's mapping (walk.go): Walk decodes each key by
//     its Field, hands the caller's extra keys to it, and reports unknown
//     keys (with the key probably meant), bad values and repeated keys as
//     Problems, with each key's line; Walked.Times reads the calendar
//     times once the job's zone is known;
//   - Tails (tails.go), the documents' parts after the name line, written
//     once for jobs that differ only in their names;
//   - Errors and Join (errors.go), a configuration's problems as one
//     error, and CalendarTime, a calendar time read in the job's zone.
//
// The lock discipline: no lock; Tails keeps its latest entry in an atomic
// pointer, replaced whole.
//
// It may import the standard library, internal/docsubset,
// internal/suggest and job/internal/schedule (a time's parsing); nothing
// of package job (the sentinel an unknown key
// wraps is passed in). It starts nothing.
package configdoc
