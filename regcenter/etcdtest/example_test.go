package etcdtest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcd"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// Example starts one member inside the process and uses it as a registry.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster, err := etcdtest.StartCluster(ctx, etcdtest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()

	rc, err := etcd.Open(ctx, regcenter.Config{Etcd: cluster.Endpoints(), Namespace: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close()
	for _, p := range []string{"/a/1", "/a/10", "/a/1/x"} {
		if _, err := rc.Create(ctx, p, nil, regcenter.Persistent); err != nil {
			fmt.Println(err)
			return
		}
	}
	kids, err := rc.Children(ctx, "/a/1")
	fmt.Println(kids, err)
	// Output: [x] <nil>
}
