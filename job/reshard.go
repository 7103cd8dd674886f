package job

import (
	"cmp"
	"context"

	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/regcenter"
)

// Resharding (job/internal/reshard's Resharder, wired in wireDuties): an
// instance flags it (necessary), waits for it before a fire, and the
// leader computes and writes every instance's assignment in one
// transaction.

// reshardSpec is the job's config as a reshard reads it.
func (r *runner) reshardSpec() reshard.Spec {
	cfg := r.config()
	j := reshard.Spec{Total: cfg.ShardingTotalCount, Strategy: cmp.Or(cfg.ShardingStrategy, DefaultShardingStrategy), Failover: cfg.Failover}
	j.Named, j.NamedErr = cfg.Strategy()
	if !cfg.Unmonitored && !cfg.book.SkipsMissed {
		j.Owes = cfg.book.Schedule // nil when it does not parse
	}
	return j
}

// requestReshard flags a reshard and asks the leader for it at once (the
// leader watches the flag's data).
func (r *runner) requestReshard(ctx context.Context) error { return r.active().reshard.Request(ctx) }

// coordCtx bounds ZooKeeper coordination for a fire: the reshard timeout,
// the session, and the runner's life (stop ends waits at once). Its parent
// is one per session, made by its first use, as runContext's: linking each
// call to both and unlinking it again cost a fire more than the call's own
// timeout.
func (r *runner) coordCtx(sess *regcenter.Session) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.ctx.coord.Of(sess, r.ctx.life), r.s.opts.reshardTimeout)
}
