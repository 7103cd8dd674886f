package job

import (
	"context"
	"errors"

	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/regcenter"
)

// Namespace-wide placement: the load table, the placer that commits a
// scheduler's reshards, the instances it places on and the books kept
// true to the assignment nodes are job/internal/placement's. What stays
// here calls it on the scheduler's behalf.

// ErrTableGarbage reports a namespace load table (/.placement) that is not
// valid. Reshards rebuild it from the jobs' assignments; reading the
// namespace's placement (`shardjob placement`, the HTTP API) returns it.
var ErrTableGarbage = placement.ErrTableGarbage

// reviewBooks is each scheduler's namespace-wide pass over the load
// table, once per reconcile round (placement.ReviewBooks): the entries of
// jobs whose nodes are gone taken out, those crediting a server that is
// not live repaired (reshard.RepairRequest). A lost race is not worth a warning:
// the next round looks again.
func (s *Scheduler) reviewBooks() {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.reshardTimeout)
	defer cancel()
	if err := placement.ReviewBooks(ctx, s.rc, s.placer, reshard.RepairRequest); err != nil && !errors.Is(err, regcenter.ErrBadVersion) && s.ctx.Err() == nil {
		s.log.Warn("reviewing the load table's books", "err", err)
	}
}
