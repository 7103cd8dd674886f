package listener_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// Funcs turns two functions into a Listener, for job.WithListener: here,
// one that reports failed executions. The scheduler calls it around every
// item it runs; the calls below stand for one item's execution.
func ExampleFuncs() {
	var l listener.Listener = listener.Funcs{
		After: func(e listener.Execution) {
			if e.Err != nil {
				fmt.Printf("%s item %d on %s failed after %v: %v\n", e.TaskID, e.Item, e.ServerID, e.End.Sub(e.Begin), e.Err)
			}
		},
	}
	fire := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	e := listener.Execution{Job: "report", TaskID: fmt.Sprintf("report@%d", fire.UnixMilli()), ServerID: "10.0.0.5@-@4242",
		Item: 3, Kind: "fire", FireTime: fire, Begin: fire}
	l.BeforeExecution(e) // Before is nil: nothing happens
	e.End, e.Err = fire.Add(1500*time.Millisecond), errors.New("warehouse API answered 503")
	l.AfterExecution(e)

	// Output:
	// report@1795744800000 item 3 on 10.0.0.5@-@4242 failed after 1.5s: warehouse API answered 503
}

// FireFuncs turns two functions into a FireListener, for
// job.WithFireListener: told once per fire on this instance, around all
// the items it runs there.
func ExampleFireFuncs() {
	var l listener.FireListener = listener.FireFuncs{
		Started: func(f listener.Fire) { fmt.Printf("%s: %s runs items %v\n", f.TaskID, f.ServerID, f.Items) },
		Ended:   func(f listener.Fire) { fmt.Printf("%s: done in %v\n", f.TaskID, f.End.Sub(f.Begin)) },
	}
	at := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	f := listener.Fire{Job: "report", TaskID: fmt.Sprintf("report@%d", at.UnixMilli()), FireTime: at, Kind: "fire",
		ServerID: "10.0.0.5@-@4242", Items: []int{0, 2}, Begin: at}
	l.FireStarted(f)
	f.End = at.Add(2 * time.Second)
	l.FireEnded(f)

	// Output:
	// report@1795744800000: 10.0.0.5@-@4242 runs items [0 2]
	// report@1795744800000: done in 2s
}

// oncePerFire is a DistributeOnce: its hooks run once per fire across the
// cluster.
type oncePerFire struct{}

func (oncePerFire) BeforeFire(_ context.Context, f listener.Fire) error {
	fmt.Println("open the day's batch for", f.FireTime)
	return nil
}

func (oncePerFire) AfterFire(_ context.Context, f listener.Fire) error {
	fmt.Println("close the day's batch for", f.FireTime)
	return nil
}

// NewGuarantee checks its arguments before it touches the registry: a job
// name must be one path segment, and a timeout not negative (0 means
// DefaultDistributeTimeout). job.DistributeOnce builds the guarantee of
// the job it wraps.
func ExampleNewGuarantee() {
	// A guarantee needs the job's connected center; its argument checks
	// come before any use of it, so a nil *ZooKeeper stands for one here.
	var rc regcenter.Center = (*zookeeper.Center)(nil)
	_, err := listener.NewGuarantee(rc, "reports/daily", oncePerFire{}, 0, nil)
	fmt.Println(err)
	_, err = listener.NewGuarantee(rc, "report", oncePerFire{}, -time.Second, nil)
	fmt.Println(err)
	_, err = listener.NewGuarantee(nil, "report", oncePerFire{}, 0, nil)
	fmt.Println(err)

	// Output:
	// listener: job name "reports/daily"
	// listener: distribute-once timeout -1s must not be negative
	// listener: a guarantee needs a registry center and hooks
}
