package jobfile

import (
	"fmt"
	"strings"

	"github.com/shardjob/shardjob/internal/suggest"
	"github.com/shardjob/shardjob/internal/yamldoc"
	"github.com/shardjob/shardjob/job"
)

// problem is one problem with a job file outside its jobs' configs (whose
// problems are job's own): it reads as those do,
// "<place>: <subject>[ at line N][: <detail>][ (<hint>)]", and matches
// job.ErrInvalidConfig, its kinds and its cause.
type problem struct {
	place   string // "top level", "regcenter", `jobs[1] "orders-sync"`
	subject string
	line    int
	detail  string
	hint    string
	kinds   []error // sentinels besides job.ErrInvalidConfig
	cause   error
}

func (e *problem) Error() string {
	return yamldoc.Message(e.place, e.subject, e.line, e.detail, e.hint)
}

// Unwrap makes errors.Is match job.ErrInvalidConfig, the kinds and the
// cause.
func (e *problem) Unwrap() []error {
	errs := append([]error{job.ErrInvalidConfig}, e.kinds...)
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// docProblem is a problem yamldoc found in the document, at place.
func docProblem(place string, e *yamldoc.Error) *problem {
	p := &problem{place: place, subject: e.Subject, line: e.Line, detail: e.Detail, cause: e.Cause}
	switch e.Kind {
	case yamldoc.TooLarge:
		p.kinds = []error{job.ErrConfigTooLarge}
	case yamldoc.TooComplex:
		p.kinds = []error{job.ErrConfigTooComplex}
	case yamldoc.KeyNotString:
		p.kinds = []error{job.ErrUnknownKey}
	}
	return p
}

// unknownKey reports the key of p as unknown at place, suggesting the
// nearest of known when it is a near miss.
func unknownKey(place string, p yamldoc.Pair, known []string) *problem {
	e := &problem{place: place, kinds: []error{job.ErrUnknownKey},
		subject: "unknown key " + yamldoc.QuoteShort(p.Key), line: p.KeyNode.Line}
	if s := suggest.Nearest(p.Key, known); s != "" {
		e.hint = fmt.Sprintf("did you mean %q?", s)
	}
	return e
}

// problems joins the problems of a file as errors.Join does, printed the
// way the job package prints its own: one as itself, several as a count
// and one bulleted line each.
type problems []error

func (p problems) Error() string {
	if len(p) == 1 {
		return p[0].Error()
	}
	msgs := make([]string, len(p))
	for i, err := range p {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("%d problems:\n\t* %s", len(p), strings.Join(msgs, "\n\t* "))
}

// Unwrap returns the problems.
func (p problems) Unwrap() []error { return p }

// entries returns the problems listed by err, an error of job's decoders
// (DecodeConfigNode, CheckDependencies), which is always a list of them.
func entries(err error) []error {
	if many, ok := err.(interface{ Unwrap() []error }); ok {
		return many.Unwrap()
	}
	return []error{err}
}

// join returns nil for no problems, otherwise problems holding them.
func join(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return problems(errs)
}
