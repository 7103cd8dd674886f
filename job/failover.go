package job

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/reshard"
)

// Failover (job/internal/failover, wired in wireDuties): the leader
// queues a departed instance's items (Departures), every instance claims
// from the queue and hands back what it cannot run (Claimer).

// queueDeparted queues for failover the items of servers that left while
// holding some (claims.Departures.Queue).
func (r *runner) queueDeparted(ctx context.Context, servers reshard.Servers) error {
	cfg := r.config()
	return r.departed.Queue(ctx, servers, cfg.ShardingTotalCount, cfg.book.Schedule)
}

// claimFailover runs on every instance of a failover job when the queue
// changes or an item is released here: it claims queued items and runs them
// at once. Unlike ElasticJob, an instance need not be idle to take failover
// work: on a cluster whose items run back to back no instance ever is, and
// the queue would starve. An item already running here is left for later.
func (r *runner) claimFailover() {
	cfg := r.config()
	if !cfg.Failover {
		return
	}
	sess, ok := r.readyToFire()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(sess.Ctx(), r.s.opts.reshardTimeout)
	defer cancel()
	items, err := r.claimer.Read(ctx)
	if err != nil || len(items) > 0 && !r.s.preemptWait(ctx) {
		return
	}
	got := r.claimer.Claim(ctx, items, cfg.ShardingTotalCount, cfg.book.Schedule, r.book.IsRunning)
	r.counters.failoverClaims.Add(int64(got.N))
	var failed map[int]failedAttempts // by item: the attempts of its fire that failed on its previous owner
	for it, a := range got.Attempts {
		if failed == nil {
			failed = map[int]failedAttempts{}
		}
		failed[it] = failedAttempts{Fire: a.Fire, N: a.N}
	}
	for ms, its := range got.ByFire {
		at := time.UnixMilli(ms)
		// Reserved before returning, so that a misfire run started right
		// after this (see release) cannot take the item first.
		todo := r.book.Reserve(cfg.book, its, at, time.Time{}, book.Failover, r.flags.DisabledItems())
		r.claimer.GiveBack(ctx, its, todo) // those that began running here meanwhile
		if len(todo) == 0 {
			continue
		}
		r.log.Info("taking over items", "items", todo, "fire", at)
		f := &fire{Sess: sess, Job: &cfg.fire, At: at, Kind: book.Failover, Items: todo, MayHaveRun: got.MayHaveRun, FailedAttempts: failed}
		if !r.goFunc(func() { r.markAndRun(f) }) {
			r.release(todo)
		}
	}
}

// onGone calls fn on a runner goroutine when the node at p is gone
// (claims.OnGone, as the claimer watches). It returns the watch's cancel.
func (r *runner) onGone(p string, fn func()) (cancel func()) { return r.claimer.Watch(p, fn) }
