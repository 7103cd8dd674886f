package job

import (
	"github.com/shardjob/shardjob/internal/docsubset"
	"github.com/shardjob/shardjob/job/internal/configdoc"
)

// The errors of a configuration: configError, one problem, and how a
// config's problems are joined into one error and named.

// configError is one problem with a configuration. It reads
// "<place>: <subject>[ at line N][: <detail>][ (<hint>)]".
type configError struct {
	place   string // whose: `job "orders-sync"`, `jobs[1] "orders-sync"`, "regcenter"
	key     string // the document key concerned, "" if none
	subject string // what: `cron "* * *"`, `unknown key "x"`
	line    int    // line in the YAML document, 0 if unknown
	detail  string
	hint    string
	kind    error // specific sentinel; ErrInvalidConfig if none applies
	cause   error // underlying error, if any

	suggestion string // for an unknown key: the known key probably meant
}

func (e *configError) Error() string {
	return docsubset.Message(e.place, e.subject, e.line, e.detail, e.hint)
}

// Unwrap makes errors.Is match ErrInvalidConfig, the specific sentinel and
// the cause.
func (e *configError) Unwrap() []error {
	errs := []error{ErrInvalidConfig}
	if e.kind != nil && e.kind != ErrInvalidConfig {
		errs = append(errs, e.kind)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// joinConfigErrors returns nil for no errors, otherwise a configErrors
// holding them all (configdoc.Join). errors.Is on the result matches any
// sentinel any of them wraps.
func joinConfigErrors(errs []error) error { return configdoc.Join(errs) }

// configErrors is every problem found with a configuration (configdoc.Errors).
type configErrors = configdoc.Errors

// jobPlace names a job in error messages.
func jobPlace(name string) string {
	if name == "" {
		return "job (no name)"
	}
	return "job " + quoteShort(name)
}
