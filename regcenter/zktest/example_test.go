package zktest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/regcenter/zktest"
)

// Example starts a three-member ensemble, crashes its leader and waits for
// the survivors to elect a new one. It needs Java and ZooKeeper, so it is
// compiled but not run by go test.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	zk, err := zktest.StartCluster(ctx, zktest.Options{Size: 3})
	if err != nil {
		fmt.Println(err) // wraps zktest.ErrNotInstalled if ZooKeeper is missing
		return
	}
	defer zk.Close()
	fmt.Println("connect to", zk.ConnectString())

	leader, err := zk.Leader(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := zk.Kill(leader); err != nil {
		fmt.Println(err)
		return
	}
	if err := zk.WaitServing(ctx); err != nil {
		fmt.Println(err)
		return
	}
	next, err := zk.Leader(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("leader %d crashed, member %d leads now\n", leader, next)

	// Bring the crashed member back; it rejoins as a follower.
	if err := zk.StartMember(ctx, leader); err != nil {
		fmt.Println(err)
	}
}
