package job

import (
	"fmt"
	"strings"

	"github.com/shardjob/shardjob/internal/yamldoc"
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
	return yamldoc.Message(e.place, e.subject, e.line, e.detail, e.hint)
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
// holding them all (nil entries dropped, a configErrors entry's own
// entries taken in its place). errors.Is on the result matches any
// sentinel any of them wraps.
func joinConfigErrors(errs []error) error {
	var all configErrors
	for _, err := range errs {
		switch e := err.(type) {
		case nil:
		case configErrors:
			all = append(all, e...)
		default:
			all = append(all, err)
		}
	}
	if len(all) == 0 {
		return nil
	}
	return all
}

// configErrors is every problem found with a configuration, in the shape
// of errors.Join's result: Unwrap returns the entries, so errors.Is and
// errors.As look through each. It prints one problem as itself, and
// several as a count followed by one bulleted line each.
type configErrors []error

func (e configErrors) Error() string { return formatConfigErrors(e) }

// Unwrap returns the problems.
func (e configErrors) Unwrap() []error { return e }

func formatConfigErrors(errs []error) string {
	if len(errs) == 1 {
		return errs[0].Error()
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("%d problems:\n\t* %s", len(errs), strings.Join(msgs, "\n\t* "))
}

// jobPlace names a job in error messages.
func jobPlace(name string) string {
	if name == "" {
		return "job (no name)"
	}
	return "job " + quoteShort(name)
}
