package failover_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// The job's leader queues the unfinished items of an instance that left;
// idle instances claim them, one claimer per item. A claimer ends the
// failover with DoneOps in the transaction that records the item
// completed; a claimer that dies loses its claim with its session, and the
// item is claimed again. (zk is the ZooKeeper this package's tests start.)
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := fmt.Sprintf("fo%d-example", os.Getpid())
	connect := func() *zookeeper.Center {
		rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zk.Servers(), Namespace: ns},
			regcenter.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			panic(err)
		}
		return rc
	}
	leader, b, c := connect(), connect(), connect()
	defer leader.Close()
	defer b.Close()

	// The leader saw 10.0.0.7 leave before items 3 and 5 completed the fire
	// of 1,700,000,000,000 ms.
	fire := int64(1_700_000_000_000)
	err := failover.NewQueue(leader, "report").Enqueue(ctx, []failover.Entry{
		{Item: 3, Fire: fire, From: "10.0.0.7"},
		{Item: 5, Fire: fire, From: "10.0.0.7"},
	})
	if err != nil {
		panic(err)
	}
	qb, qc := failover.NewQueue(b, "report"), failover.NewQueue(c, "report")
	items, err := qb.Items(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("queued:", items)

	// b claims item 3; c's claim of the same item is refused.
	e, err := qb.Claim(ctx, 3, "b")
	if err != nil {
		panic(err)
	}
	fmt.Printf("b runs item %d of fire %d, from %s\n", e.Item, e.Fire, e.From)
	_, err = qc.Claim(ctx, 3, "c")
	fmt.Println("c claims item 3:", errors.Is(err, failover.ErrClaimed))
	// b ran it: the queue entry and the claim go in one transaction (with
	// the completion mark, in the scheduler).
	if err := b.Multi(ctx, qb.DoneOps(e)...); err != nil {
		panic(err)
	}

	// c claims item 5, then dies: its claim goes with its session, and b
	// claims the item.
	if _, err := qc.Claim(ctx, 5, "c"); err != nil {
		panic(err)
	}
	if err := c.Close(); err != nil {
		panic(err)
	}
	if e, err = qb.Claim(ctx, 5, "b"); err != nil {
		panic(err)
	}
	fmt.Printf("b runs item %d after c died\n", e.Item)
	if err := b.Multi(ctx, qb.DoneOps(e)...); err != nil {
		panic(err)
	}
	items, err = qb.Items(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("queued:", items)

	// Output:
	// queued: [3 5]
	// b runs item 3 of fire 1700000000000, from 10.0.0.7
	// c claims item 3: true
	// b runs item 5 after c died
	// queued: []
}
