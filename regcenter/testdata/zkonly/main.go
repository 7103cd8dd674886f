// A program that runs a job on ZooKeeper, opened by regcenter.Open: it
// links neither etcd's client nor PostgreSQL's, nor an etcd server.
package main

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // regcenter.Open serves Config.Servers
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := regcenter.Open(ctx, regcenter.Config{Servers: []string{"127.0.0.1:2181"}, Namespace: "zkonly"})
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
