package httpjob

import (
	"context"
	"errors"
	"log/slog"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype"
)

// recordBody records the start of a response's body, head, as the run's
// output (see jobtype.Output); short says the body was not read to its
// end. Outside a scheduler's run (a test calling Execute) there is no run
// to record it for, and nothing is done.
func recordBody(ctx context.Context, log *slog.Logger, head []byte, short bool) {
	cut := short || len(head) > job.MaxOutputSize
	out := jobtype.Output(head[:min(len(head), job.MaxOutputSize)], cut, false)
	if out == nil {
		return
	}
	if err := job.RecordOutput(ctx, out); err != nil && !errors.Is(err, job.ErrOutputOutsideRun) {
		log.Warn("cannot record the response's body as the output", "err", err)
	}
}
