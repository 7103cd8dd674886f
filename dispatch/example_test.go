package dispatch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

// Five reports between 02:00 and 03:00: every task may start at 02:00, and
// their acceptable starts are spread over the hour in the order given.
func ExampleDispatcher_Assign() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dispatch-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	d, err := dispatch.Open(ctx, dispatch.Config{DSN: filepath.Join(dir, "dispatch.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := d.Close(ctx); err != nil {
			fmt.Println(err)
		}
	}()
	if err := d.PutWorker(ctx, dispatch.Worker{Name: "acme", MaxRunning: 10}); err != nil {
		fmt.Println(err)
		return
	}
	start := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	tasks, err := d.Assign(ctx, dispatch.Assignment{
		Worker: "acme", Start: start, End: start.Add(time.Hour),
		Tasks: []dispatch.NewTask{{ExternalID: "r1"}, {ExternalID: "r2"}, {ExternalID: "r3"}, {ExternalID: "r4"}, {ExternalID: "r5"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tasks {
		fmt.Println(t.ExternalID, t.Status, t.ExpectedStart.Format("15:04"), t.AcceptableStart.Format("15:04"))
	}
	// Assigning r1 again returns the same task.
	again, err := d.Assign(ctx, dispatch.Assignment{Worker: "acme", Start: start, End: start.Add(time.Hour), Tasks: []dispatch.NewTask{{ExternalID: "r1"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("same task:", again[0].UUID == tasks[0].UUID)
	// Output:
	// r1 waiting 02:00 02:12
	// r2 waiting 02:00 02:24
	// r3 waiting 02:00 02:36
	// r4 waiting 02:00 02:48
	// r5 waiting 02:00 03:00
	// same task: true
}

func ExampleSpread() {
	start := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	for _, t := range dispatch.Spread(start, start.Add(time.Hour), 4) {
		fmt.Println(t.Format("15:04"))
	}
	// Output:
	// 02:15
	// 02:30
	// 02:45
	// 03:00
}

func ExampleBackoff_Delay() {
	b := dispatch.Backoff{Base: time.Second, Max: 10 * time.Second, Jitter: 0.000001}
	for attempt := 1; attempt <= 5; attempt++ {
		fmt.Println(attempt, b.Delay(attempt).Round(time.Millisecond))
	}
	// Output:
	// 1 1s
	// 2 2s
	// 3 4s
	// 4 8s
	// 5 10s
}
