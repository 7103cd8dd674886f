package configdoc

import (
	"fmt"
	"strings"
	"time"

	"github.com/shardjob/shardjob/internal/docsubset"
	"github.com/shardjob/shardjob/job/internal/schedule"
)

// Errors is every problem found with a configuration, in the shape of
// errors.Join's result: Unwrap returns the entries, so errors.Is and
// errors.As look through each. It prints one problem as itself, and
// several as a count followed by one bulleted line each.
type Errors []error

func (e Errors) Error() string {
	if len(e) == 1 {
		return e[0].Error()
	}
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("%d problems:\n\t* %s", len(e), strings.Join(msgs, "\n\t* "))
}

// Unwrap returns the problems.
func (e Errors) Unwrap() []error { return e }

// Join returns nil for no errors, otherwise an Errors holding them all
// (nil entries dropped, an Errors entry's own entries taken in its
// place).
func Join(errs []error) error {
	var all Errors
	for _, err := range errs {
		switch e := err.(type) {
		case nil:
		case Errors:
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

// CalendarTime reads a calendar time's value in loc (schedule.ParseTime):
// ok is false when n is no string (its field's decoder reports that); a
// blank string is the zero time.
func CalendarTime(n *docsubset.Node, loc *time.Location) (t time.Time, ok bool, err error) {
	var s string
	if String(n, &s) != nil {
		return time.Time{}, false, nil
	}
	if strings.TrimSpace(s) == "" {
		return time.Time{}, true, nil
	}
	t, err = schedule.ParseTime(s, loc)
	return t, err == nil, err
}
