// A program that runs a job on etcd, opened by regcenter.Open: it links
// neither ZooKeeper's client nor PostgreSQL's, nor an etcd server.
package main

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/etcd" // regcenter.Open serves Config.Etcd
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := regcenter.Open(ctx, regcenter.Config{Etcd: []string{"127.0.0.1:2379"}, Namespace: "etcdonly"})
	if err != nil {
		panic(err)
	}
	defer rc.Close()
	s, err := job.NewScheduler(rc)
	if err != nil {
		panic(err)
	}
	_ = s.Add(ctx, job.Config{Name: "j", Cron: "0 * * * * *", ShardingTotalCount: 1},
		job.SimpleFunc(func(context.Context, job.ShardingContext) error { return nil }))
}
