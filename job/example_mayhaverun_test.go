package job_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job"
)

// ExampleShardingContext_MayHaveRun is an invoice job that must not bill
// twice. Most runs stand for fires nobody ran; a failover run after a
// crash says which of its fires the crashed instance may have run, and
// only for those does the job look in its own ledger before billing.
func ExampleShardingContext_MayHaveRun() {
	billed := map[time.Time]bool{} // the job's own record of its side effects
	invoices := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		for fire := sc.FireTime; !fire.After(sc.Through); fire = fire.Add(time.Minute) {
			if sc.MayHaveRun(fire) && billed[fire] {
				fmt.Printf("%s: billed before the crash, skipped\n", fire.Format("15:04"))
				continue
			}
			billed[fire] = true
			fmt.Printf("%s: billed\n", fire.Format("15:04"))
		}
		return nil
	})

	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	// The crashed instance billed 09:00, then died before its completion
	// was written; nobody ran 09:01 or 09:02.
	billed[t0] = true
	// The failover run stands for 09:00 through 09:02, of which 09:00 and
	// 09:01 were due before the crashed instance's items were queued.
	sc := job.ShardingContext{JobName: "invoices", Kind: job.KindFailover,
		FireTime: t0, Through: t0.Add(2 * time.Minute), MayHaveRunThrough: t0.Add(time.Minute)}
	_ = invoices.Execute(context.Background(), sc)
	// Output:
	// 09:00: billed before the crash, skipped
	// 09:01: billed
	// 09:02: billed
}
