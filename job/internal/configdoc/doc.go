// Package configdoc decodes the values of the config document stored in
// a job's config node (and of a job file's jobs, read into the same
// tree), over internal/yamlsubset's tree: a string, a list of strings, a
// boolean, an integer, a duration, a fraction, and the retry and alert
// mappings, each strictly and with the error text package job reports
// with the key and its line. Package job keeps the document's keys (its
// configFields table, which field each sets) and the checks of a Config.
//
// It owns:
//
//   - the decoders of a value (values.go): String, StringList, Bool, Int,
//     Duration, Fraction;
//   - the nested mappings (nested.go): Retry and Alert, field for field
//     job's RetryPolicy and AlertPolicy, decoded by DecodeRetry and
//     DecodeAlert with their unknown keys named;
//   - PlainName (nested.go), whether the writer writes a name as it is.
//
// The lock discipline: none; it holds no state.
//
// It may import the standard library, internal/yamlsubset and
// internal/suggest; nothing of package job (the sentinel an unknown key
// wraps is passed in). It starts nothing.
package configdoc
