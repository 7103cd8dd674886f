package jobtest_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtest"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter/embedded"
)

// A job that fires every minute, driven by a fake clock: each fire comes
// when the test moves the clock to it, at once, whatever the machine. The
// test moves the clock once the previous fire has ended (a fire listener
// says so) and the scheduler waits for the next one (WaitForTimers).
func ExampleClock() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // every wait has a deadline
	defer cancel()

	// A registry inside the process: nothing to install.
	dir, err := os.MkdirTemp("", "jobtest-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	rc, err := embedded.New(ctx, embedded.Config{Dir: filepath.Join(dir, "registry"), Namespace: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close() // after Shutdown

	clock := jobtest.NewClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	ended := make(chan struct{}, 3)
	sched, err := job.NewScheduler(rc, job.WithServerID("test-1"), job.WithClock(clock),
		job.WithFireListener(listener.FireFuncs{Ended: func(listener.Fire) { ended <- struct{}{} }}),
		job.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	err = sched.Add(ctx, job.Config{Name: "report", Cron: "0 * * * * *", TimeZone: "UTC", ShardingTotalCount: 1},
		job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
			fmt.Println("fired at", sc.FireTime.Format(time.TimeOnly), "by the clock at", clock.Now().Format(time.TimeOnly))
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
	defer sched.Shutdown(ctx)

	for range 3 {
		// Once the scheduler waits for its next fire, move the clock to it.
		if err := clock.WaitForTimers(ctx, 1); err != nil {
			fmt.Println(err)
			return
		}
		clock.Advance(time.Minute)
		select {
		case <-ended:
		case <-ctx.Done():
			fmt.Println("no fire:", ctx.Err())
			return
		}
	}
	// Output:
	// fired at 09:01:00 by the clock at 09:01:00
	// fired at 09:02:00 by the clock at 09:02:00
	// fired at 09:03:00 by the clock at 09:03:00
}
