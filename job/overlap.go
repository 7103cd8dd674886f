package job

import (
	"errors"
	"fmt"
)

// replacedError is the error a run replaced by a later fire is recorded
// with (OverlapReplace): ErrReplaced, with what the job returned.
func replacedError(err error) error {
	if err == nil || errors.Is(err, ErrReplaced) {
		return ErrReplaced
	}
	return fmt.Errorf("%w: the job returned: %w", ErrReplaced, err)
}
