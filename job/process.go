package job

import (
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job/internal/process"
)

// The process behind a server id is job/internal/process's: a live
// process elsewhere holding the id is refused at once with this error.

// idInUse is the error for an id held by a live process elsewhere.
func idInUse(id string, h process.Holder, session int64, timeout time.Duration) error {
	return fmt.Errorf("%w: server id %q is held by %s (session 0x%x); give each process its own id, or leave the default (one per process); if that process is gone, its session ends within %v",
		ErrServerIDInUse, id, h, session, timeout)
}
