package election_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/shardjob/shardjob/election"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// Two candidates, each on its own session, compete for a job's leadership:
// the first to join leads; when it resigns, the other takes over at once.
// A candidate that does not lead gets no fence, so it cannot write as the
// leader. (zk is the ZooKeeper this package's tests start.)
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := fmt.Sprintf("el%d-example", os.Getpid())
	quiet := slog.New(slog.DiscardHandler)

	events := make(chan string, 8)
	candidate := func(id string) (*zookeeper.Center, *election.Election) {
		rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zk.Servers(), Namespace: ns}, regcenter.WithLogger(quiet))
		if err != nil {
			panic(err)
		}
		e := election.New(rc, "/report/leader/election/latch", "/report/leader/election/host", id, election.Callbacks{
			OnElected: func(context.Context) { events <- id + " elected" },
			OnRevoked: func() { events <- id + " revoked" },
		}, quiet)
		if err := e.Campaign(ctx); err != nil {
			panic(err)
		}
		return rc, e
	}
	next := func() string {
		select {
		case ev := <-events:
			return ev
		case <-ctx.Done():
			return "no event: " + ctx.Err().Error()
		}
	}

	rcA, a := candidate("a")
	defer rcA.Close()
	defer a.Close()
	fmt.Println(next())

	rcB, b := candidate("b")
	defer rcB.Close()
	defer b.Close()
	leader, err := b.Leader(ctx)
	if err != nil {
		panic(err)
	}
	_, err = b.Fence()
	fmt.Printf("b sees leader %s; b leads: %v; b's fence: %v\n", leader, b.IsLeader(), errors.Is(err, election.ErrNotLeader))

	if err := a.Resign(ctx); err != nil {
		panic(err)
	}
	fmt.Println(next())
	fmt.Println(next())
	if leader, err = b.Leader(ctx); err != nil {
		panic(err)
	}
	fmt.Println("leader now:", leader)
	if err := b.Resign(ctx); err != nil {
		panic(err)
	}
	fmt.Println(next())

	// Output:
	// a elected
	// b sees leader a; b leads: false; b's fence: true
	// a revoked
	// b elected
	// leader now: b
	// b revoked
}
