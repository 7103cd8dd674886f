package job

import (
	"context"

	"github.com/shardjob/shardjob/job/internal/reshard"
)

// Failover (job/internal/failover, wired in wireDuties): the leader
// queues a departed instance's items (Departures), every instance claims
// from the queue and hands back what it cannot run (Claimer).

// queueDeparted queues for failover the items of servers that left while
// holding some (claims.Departures.Queue).
func (r *runner) queueDeparted(ctx context.Context, servers reshard.Servers) error {
	cfg := r.config()
	return r.active().departed.Queue(ctx, servers, cfg.ShardingTotalCount, cfg.book.Schedule)
}
