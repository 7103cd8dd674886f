package history

import "errors"

// Sentinel errors. Every error the package returns for a misuse or a bad
// row wraps one of these; test with errors.Is.
var (
	// ErrInvalidConfig is a Config field with a bad value; the message
	// names the field.
	ErrInvalidConfig = errors.New("history: invalid config")
	// ErrInvalidFilter is a Filter with a bad value (a limit out of
	// range, a cursor that is not one, since after until); the message
	// names the field.
	ErrInvalidFilter = errors.New("history: invalid filter")
	// ErrBadRow is a row of the history tables that cannot be read back:
	// a timestamp out of range, an unknown result, a value of the wrong
	// type. The message names the table and the row's id.
	ErrBadRow = errors.New("history: bad row")
	// ErrNoDatabase is OpenReader on an SQLite file that does not exist:
	// there is no history to read there.
	ErrNoDatabase = errors.New("history: no history database")
	// ErrInvalidAudit is an audit entry that cannot be written: no
	// operation, an unknown result, a time out of range, an unknown ID.
	ErrInvalidAudit = errors.New("history: invalid audit entry")
	// ErrClosed is returned by calls on a Recorder or Reader after Close.
	ErrClosed = errors.New("history: closed")
)
