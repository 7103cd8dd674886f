package jobfile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
)

func ExampleLoad() {
	f, err := jobfile.Load(strings.NewReader(`
regcenter:
  servers: [127.0.0.1:2181]
  namespace: shop
jobs:
  - name: orders-sync
    handler: orders
    cron: "*/5 * * * * *"
    shardingTotalCount: 4
    shardingItemParameters: "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen"
    failover: true
  - name: nightly-report
    cron: "@daily"
    shardingTotalCount: 1
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("namespace:", f.Regcenter.Namespace, "session timeout:", f.Regcenter.SessionTimeout)
	for _, s := range f.Jobs {
		params, _ := s.ItemParameters()
		fmt.Printf("%s -> %s: %q, %d items %v, failover %v\n",
			s.Name, s.HandlerName(), s.Cron, s.ShardingTotalCount, params, s.Failover)
	}

	_, err = jobfile.Load(strings.NewReader(`
regcenter:
  servers: [127.0.0.1:2181]
jobs:
  - name: orders-sync
    cron: "*/5 * * * * *"
    shardingTotalcount: 4
`))
	fmt.Println(err)
	fmt.Println(errors.Is(err, job.ErrUnknownKey))
	// Output:
	// namespace: shop session timeout: 10s
	// orders-sync -> orders: "*/5 * * * * *", 4 items map[0:Beijing 1:Shanghai 2:Guangzhou 3:Shenzhen], failover true
	// nightly-report -> nightly-report: "@daily", 1 items map[], failover false
	// jobs[0] "orders-sync": unknown key "shardingTotalcount" at line 7 (did you mean "shardingTotalCount"?)
	// true
}

// YAML jobs are bound to Go implementations by handler name; a job without
// a handler key uses the handler registered under its own name.
func ExampleSpec_HandlerName() {
	f, err := jobfile.Load(strings.NewReader(`
regcenter:
  servers: [zk1:2181, zk2:2181, zk3:2181]
jobs:
  - name: orders-sync
    handler: orders
    cron: "*/5 * * * * *"
    shardingTotalCount: 4
  - name: cleanup
    cron: "@every 1m"
    shardingTotalCount: 2
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Regcenter.Servers, f.Regcenter.Namespace)
	for _, spec := range f.Jobs {
		fmt.Println(spec.Name, "->", spec.HandlerName())
	}
	// The Go implementations given to jobfile.Add (Options.Handlers):
	handlers := map[string]job.Job{
		"orders":  job.SimpleFunc(func(context.Context, job.ShardingContext) error { return nil }),
		"cleanup": job.SimpleFunc(func(context.Context, job.ShardingContext) error { return nil }),
	}
	for _, spec := range f.Jobs {
		_, ok := handlers[spec.HandlerName()]
		fmt.Println(spec.Name, "bound:", ok)
	}
	// Output:
	// [zk1:2181 zk2:2181 zk3:2181] shardjob
	// orders-sync -> orders
	// cleanup -> cleanup
	// orders-sync bound: true
	// cleanup bound: true
}
