package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// Connect, write a node atomically with another, and read it back. (The
// examples run against the ZooKeeper this package's tests start; in an
// application, Servers names your ensemble.)
func ExampleOpen() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{
		Servers:   zk.Servers(), // e.g. []string{"10.0.0.1:2181", "10.0.0.2:2181"}
		Namespace: "example-shop",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close()
	_ = rc.DeleteTree(ctx, "/orders")
	if _, err := rc.Create(ctx, "/orders/config", []byte("cron: '* * * * * *'"), regcenter.Persistent); err != nil {
		fmt.Println(err)
		return
	}
	data, _, err := rc.Get(ctx, "/orders/config")
	fmt.Println(string(data), err)
	// Output: cron: '* * * * * *' <nil>
}

// A transaction applies all of its ops or none, and says which op failed.
func ExampleCenter_Multi() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zk.Servers(), Namespace: "example-multi"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close()
	_ = rc.DeleteTree(ctx, "/job")
	_ = rc.EnsurePath(ctx, "/job/items")
	err = rc.Multi(ctx,
		regcenter.CreateOp{Path: "/job/items/0"},
		regcenter.CreateOp{Path: "/job/items/1"},
	)
	fmt.Println("first:", err)
	err = rc.Multi(ctx,
		regcenter.CreateOp{Path: "/job/items/2"},
		regcenter.CreateOp{Path: "/job/items/1"}, // exists: nothing is applied
	)
	var me *regcenter.MultiError
	fmt.Println("second failed at op", func() int { errors.As(err, &me); return me.Index }(), errors.Is(err, regcenter.ErrNodeExists))
	kids, _ := rc.Children(ctx, "/job/items")
	sort.Strings(kids)
	fmt.Println(kids)
	// Output:
	// first: <nil>
	// second failed at op 1 true
	// [0 1]
}
