package job_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// ExampleScheduler wires a scheduler end to end: a ZooKeeper started with
// zktest (use your own servers in production), one registry center, one
// scheduler, one job, Start, and a graceful Shutdown after the first fire.
func ExampleScheduler() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	zk, err := zktest.StartCluster(ctx, zktest.Options{})
	if err != nil {
		fmt.Println(err) // wraps zktest.ErrNotInstalled if ZooKeeper is missing
		return
	}
	defer zk.Close()

	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zk.Servers(), Namespace: "shop"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close() // after Shutdown: the scheduler does not own rc

	sched, err := job.NewScheduler(rc, job.WithServerID("instance-1"))
	if err != nil {
		fmt.Println(err)
		return
	}

	var mu sync.Mutex
	ran := map[time.Time][]string{} // fire time -> what ran
	firstFire := make(chan time.Time, 1)
	err = sched.Add(ctx, job.Config{
		Name:                   "orders-sync",
		Cron:                   "* * * * * *", // every second
		ShardingTotalCount:     4,
		ShardingItemParameters: "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen",
	}, job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		if err := sc.StillOwner(); err != nil {
			return err // the item moved or the session is gone: do nothing
		}
		mu.Lock()
		defer mu.Unlock()
		ran[sc.FireTime] = append(ran[sc.FireTime], fmt.Sprintf("item %d (%s) ran on %s", sc.Item, sc.ItemParameter, sc.ServerID))
		if len(ran[sc.FireTime]) == sc.ShardingTotalCount {
			select {
			case firstFire <- sc.FireTime:
			default:
			}
		}
		return nil
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := sched.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}

	var fire time.Time
	select {
	case fire = <-firstFire:
	case <-ctx.Done():
		fmt.Println("no fire:", ctx.Err())
	}

	// Shutdown stops firing, lets running items finish (until its context
	// ends) and removes this instance from ZooKeeper.
	shutdownCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := sched.Shutdown(shutdownCtx); err != nil {
		fmt.Println(err)
	}

	mu.Lock()
	lines := ran[fire]
	mu.Unlock()
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// item 0 (Beijing) ran on instance-1
	// item 1 (Shanghai) ran on instance-1
	// item 2 (Guangzhou) ran on instance-1
	// item 3 (Shenzhen) ran on instance-1
}

// A Job is called once per sharding item per fire. The ShardingContext
// says which item, with its parameter, and why it runs.
func ExampleSimpleFunc() {
	orders := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		// Check ownership right before a side effect that must not happen
		// on two instances at once.
		if err := sc.StillOwner(); err != nil {
			return err
		}
		fmt.Printf("%s: item %d of %d (%s), job parameter %q, %s run\n",
			sc.JobName, sc.Item, sc.ShardingTotalCount, sc.ItemParameter, sc.JobParameter, sc.Kind)
		return nil
	})

	// The scheduler builds the ShardingContext; here one is made by hand,
	// as a unit test of the job would.
	err := orders.Execute(context.Background(), job.ShardingContext{
		JobName:            "orders-sync",
		ShardingTotalCount: 4,
		Item:               1,
		ItemParameter:      "Shanghai",
		JobParameter:       "batch=100",
		Kind:               job.KindFire,
	})
	fmt.Println("error:", err)
	// Output:
	// orders-sync: item 1 of 4 (Shanghai), job parameter "batch=100", fire run
	// error: <nil>
}

// Cron expressions have six fields, seconds first, and are evaluated in the
// job's TimeZone whatever the zone of the machine.
func ExampleConfig_Schedule() {
	c := job.Config{
		Name:               "morning-report",
		Cron:               "0 0 9 * * MON-FRI", // 09:00:00 on weekdays
		TimeZone:           "Asia/Shanghai",
		ShardingTotalCount: 1,
	}
	sched, loc, err := c.Schedule()
	if err != nil {
		fmt.Println(err)
		return
	}
	t := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC) // a Friday
	for range 3 {
		t = sched.Next(t)
		fmt.Println(t.In(loc).Format("Mon 2006-01-02 15:04 MST"), "=", t.UTC().Format("15:04 MST"))
	}

	// Five fields are refused, with a hint.
	c.Cron = "0 9 * * MON-FRI"
	_, _, err = c.Schedule()
	fmt.Println(errors.Is(err, job.ErrInvalidCron))
	fmt.Println(err)
	// Output:
	// Mon 2026-03-30 09:00 CST = 01:00 UTC
	// Tue 2026-03-31 09:00 CST = 01:00 UTC
	// Wed 2026-04-01 09:00 CST = 01:00 UTC
	// true
	// job "morning-report": cron "0 9 * * MON-FRI": expected exactly 6 fields, found 5: [0 9 * * MON-FRI] (six fields are needed, seconds first: "0 */5 * * * *" fires every five minutes)
}

func ExampleConfig_ItemParameters() {
	c := job.Config{Name: "orders-sync", Cron: "@every 5s", ShardingTotalCount: 4,
		ShardingItemParameters: "0=Beijing, 1=Shanghai,3="}
	params, err := c.ItemParameters()
	fmt.Println(params, err)
	fmt.Printf("item 2: %q, item 3: %q\n", params[2], params[3])

	c.ShardingItemParameters = "0=Beijing,4=Chengdu,Shanghai"
	_, err = c.ItemParameters()
	fmt.Println(err)
	// Output:
	// map[0:Beijing 1:Shanghai 3:] <nil>
	// item 2: "", item 3: ""
	// 2 problems:
	// 	* job "orders-sync": shardingItemParameters "0=Beijing,4=Chengdu,Shanghai": entry "4=Chengdu": item 4 is outside [0,4) given by shardingTotalCount
	// 	* job "orders-sync": shardingItemParameters "0=Beijing,4=Chengdu,Shanghai": entry "Shanghai" has no '=' (want item=value)
}

// Encode writes the document stored in the job's ZooKeeper config node;
// DecodeConfig reads it back, strictly.
func ExampleConfig_Encode() {
	c := job.Config{Name: "orders-sync", Cron: "*/5 * * * * *", ShardingTotalCount: 4, Failover: true}
	doc, err := c.Encode()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(doc))

	back, err := job.DecodeConfig(doc)
	fmt.Println(back == c, err)

	_, err = job.DecodeConfig([]byte("name: orders-sync\ncron: '@hourly'\nshardingTotalCount: 4\nfailOver: true\n"))
	fmt.Println(err)
	// Output:
	// name: orders-sync
	// cron: '*/5 * * * * *'
	// timeZone: ""
	// shardingTotalCount: 4
	// shardingItemParameters: ""
	// jobParameter: ""
	// failover: true
	// misfire: ""
	// monitorExecution: true
	// maxTimeDiff: 0s
	// reconcileInterval: 0s
	// shardingStrategy: ""
	// description: ""
	// disabled: false
	// overwrite: false
	// true <nil>
	// job "orders-sync": unknown key "failOver" at line 4 (did you mean "failover"?)
}

// WithDefaults spells out what the zero values of a Config mean.
func ExampleConfig_WithDefaults() {
	c := job.Config{Name: "orders-sync", Cron: "@hourly", ShardingTotalCount: 4}.WithDefaults()
	fmt.Printf("misfire %q, reconcile every %v, strategy %s, time zone %q\n",
		c.Misfire, c.ReconcileInterval, c.ShardingStrategy, c.TimeZone)
	// Output:
	// misfire "once", reconcile every 1m0s, strategy BALANCED, time zone ""
}

// Validate reports every problem at once, each naming the job and the field.
func ExampleConfig_Validate() {
	c := job.Config{Name: "orders-sync", Cron: "*/5 * * *", ShardingTotalCount: 0}
	err := c.Validate()
	fmt.Println(err)
	fmt.Println(errors.Is(err, job.ErrInvalidCron), errors.Is(err, job.ErrInvalidShardingCount), errors.Is(err, job.ErrInvalidConfig))
	// Output:
	// 2 problems:
	// 	* job "orders-sync": cron "*/5 * * *": expected exactly 6 fields, found 4: [*/5 * * *]
	// 	* job "orders-sync": shardingTotalCount 0: must be between 1 and 10000
	// true true true
}

// Listeners hear about every execution on this instance, before and
// after; they run on the execution's goroutine, so keep them quick.
func ExampleWithListener() {
	audit := listener.Funcs{
		After: func(e listener.Execution) {
			if e.Err != nil {
				fmt.Printf("%s item %d (%s run of %s) failed after %v: %v\n",
					e.Job, e.Item, e.Kind, e.TaskID, e.End.Sub(e.Begin), e.Err)
			}
		},
	}
	var rc *zookeeper.Center // from zookeeper.Open
	sched, err := job.NewScheduler(rc, job.WithServerID("10.0.0.5"), job.WithListener(audit))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = sched // Add jobs, Start, ...
}

// A fire claims its items a lead ahead of its time (500 ms by default, at most half the
// job's period), so
// that they start at the fire's time itself; a lead of 0 claims at the
// fire's time. Leads over 10s are refused.
func ExampleWithFireLead() {
	var rc *zookeeper.Center // from zookeeper.Open
	if _, err := job.NewScheduler(rc, job.WithServerID("10.0.0.5"), job.WithFireLead(0)); err != nil {
		fmt.Println(err)
	}
	_, err := job.NewScheduler(rc, job.WithServerID("10.0.0.5"), job.WithFireLead(time.Minute))
	fmt.Println(errors.Is(err, job.ErrInvalidOption))
	// Output:
	// true
}
