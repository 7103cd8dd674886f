// Command quickstart is the dispatcher's quick start, shown whole in
// docs/dispatch.md: it opens a dispatcher on SQLite in a temporary
// directory, assigns one task that may start now and should start within a
// minute, lets a worker run it and finish it, and prints what happened.
//
// From the repository root:
//
//	go run ./example/dispatch/quickstart
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) (err error) {
	dir, err := os.MkdirTemp("", "dispatch-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var d *dispatch.Dispatcher
	var work sync.WaitGroup // the workers' goroutines; waited for after Close
	defer work.Wait()
	finished := make(chan string, 1) // the uuid of the task, once its worker finished it
	d, err = dispatch.Open(ctx, dispatch.Config{
		DSN: filepath.Join(dir, "dispatch.db"), // SQLite, embedded; Driver "postgres" for a cluster
		// OnStart hands a task to its worker. The work runs on after it
		// returns; ctx ends if the attempt times out or the node stops.
		OnStart: func(ctx context.Context, t dispatch.Task) error {
			fmt.Printf("started  %s, attempt %d, late %t\n", t.ExternalID, t.Attempt, t.Late)
			work.Add(1)
			go func() {
				defer work.Done()
				fmt.Printf("working  on %q\n", t.Info) // the real work goes here
				if err := d.FinishAttempt(ctx, t.UUID, t.Attempt); err != nil {
					fmt.Fprintln(os.Stderr, "finish:", err)
					return
				}
				finished <- t.UUID // a task finishes once: the buffer holds it
			}()
			return nil
		},
	})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, d.Close(cctx))
	}()

	// A worker is a tenant with its own cap on running tasks.
	if err := d.PutWorker(ctx, dispatch.Worker{Name: "acme", MaxRunning: 10}); err != nil {
		return err
	}
	now := time.Now()
	tasks, err := d.Assign(ctx, dispatch.Assignment{
		Worker:     "acme",
		Start:      now,                  // the expected start: it may start from now
		End:        now.Add(time.Minute), // the acceptable start: it should start within a minute
		Tasks:      []dispatch.NewTask{{ExternalID: "report-1", Info: []byte("March report")}},
		MaxRetries: 2,                // started again up to twice if an attempt fails or times out
		Timeout:    30 * time.Second, // an attempt not finished by then times out
	})
	if err != nil {
		return err
	}
	t := tasks[0]
	fmt.Printf("assigned %s: %s, may start from %s, should start by %s\n",
		t.ExternalID, t.Status, t.ExpectedStart.Format(time.TimeOnly), t.AcceptableStart.Format(time.TimeOnly))

	if err := d.Start(ctx); err != nil { // this process now runs tasks
		return err
	}
	select {
	case <-finished:
	case <-ctx.Done():
		return fmt.Errorf("task %s did not finish: %w", t.UUID, ctx.Err())
	}
	if t, err = d.Task(ctx, t.UUID); err != nil {
		return err
	}
	fmt.Printf("done     %s: %s after %d attempt(s), started %s after its expected start\n",
		t.ExternalID, t.Status, t.Attempt, t.StartedAt.Sub(t.ExpectedStart).Round(time.Millisecond))
	return nil
}
