package firing

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/book"
)

// ClaimFailover runs on every instance of a failover job when the queue
// changes or an item is released here: it claims queued items
// (failover.Claimer) and runs them at once. Unlike ElasticJob, an
// instance need not be idle to take failover work: on a cluster whose
// items run back to back no instance ever is, and the queue would starve.
// An item already running here is left for later.
func (fr *Firer) ClaimFailover() {
	j := fr.Current()
	if !j.Done.Failover {
		return
	}
	sess, ok := fr.Ready()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(sess.Ctx(), fr.Timeout)
	defer cancel()
	items, err := fr.Claimer.Read(ctx)
	if err != nil || len(items) > 0 && !fr.Preempt(ctx) {
		return
	}
	got := fr.Claimer.Claim(ctx, items, j.Total, j.Book.Schedule, fr.Book.IsRunning)
	fr.FailoverClaims.Add(int64(got.N))
	var failed map[int]assume.Failed // by item: the attempts of its fire that failed on its previous owner
	for it, a := range got.Attempts {
		if failed == nil {
			failed = map[int]assume.Failed{}
		}
		failed[it] = assume.Failed{Fire: a.Fire, N: a.N}
	}
	for ms, its := range got.ByFire {
		at := time.UnixMilli(ms)
		// Reserved before returning, so that a misfire run started right
		// after this (see Release) cannot take the item first.
		todo := fr.Book.Reserve(j.Book, its, at, time.Time{}, book.Failover, fr.Flags.DisabledItems())
		fr.Claimer.GiveBack(ctx, its, todo) // those that began running here meanwhile
		if len(todo) == 0 {
			continue
		}
		fr.Log.Info("taking over items", "items", todo, "fire", at)
		f := &Fire{Sess: sess, Job: j, At: at, Kind: book.Failover, Items: todo, MayHaveRun: got.MayHaveRun, FailedAttempts: failed}
		if !fr.Go(func() { fr.MarkAndRun(f) }) {
			fr.Release(todo)
		}
	}
}
