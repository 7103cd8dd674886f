package history_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

// A recorder on SQLite: what the scheduler would tell it, written and read
// back newest first. An application passes rec.SchedulerOptions() to
// job.NewScheduler instead of calling AfterExecution and HandleEvent.
func Example() {
	dir, err := os.MkdirTemp("", "history-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	rec, err := history.Open(ctx, history.Config{DSN: filepath.Join(dir, "history.db")})
	if err != nil {
		panic(err)
	}
	fire := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	for item, err := range []error{nil, errors.New("no stock"), job.ErrExecutionTimeout} {
		rec.AfterExecution(listener.Execution{Job: "orders-sync", TaskID: "orders-sync@1", ServerID: "10.0.0.5", Item: item,
			Kind: "fire", FireTime: fire, Begin: fire, End: fire.Add(120 * time.Millisecond), Err: err})
	}
	rec.HandleEvent(job.Event{Kind: job.EventPaused, Job: "orders-sync", Server: "10.0.0.5", At: fire.Add(time.Second)})
	if err := rec.Flush(ctx); err != nil { // the writer writes in batches, in the background
		panic(err)
	}

	page, err := rec.Query(ctx, history.Filter{Job: "orders-sync", Limit: 2})
	if err != nil {
		panic(err)
	}
	for _, e := range page.Executions {
		fmt.Println(e.Job, e.Item, e.Kind, e.Server, e.Result, e.Duration(), e.Error)
	}
	older, err := rec.Query(ctx, history.Filter{Job: "orders-sync", Before: page.Next})
	if err != nil {
		panic(err)
	}
	fmt.Println("next page:", len(older.Executions), "execution")
	failed, err := rec.Query(ctx, history.Filter{Failed: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("failed:", len(failed.Executions))
	events, err := rec.QueryEvents(ctx, history.Filter{})
	if err != nil {
		panic(err)
	}
	fmt.Println("event:", events.Events[0].Kind, events.Events[0].Job)
	st := rec.Stats()
	fmt.Println("recorded", st.Recorded, "written", st.Written, "dropped", st.Dropped)
	if err := rec.Close(ctx); err != nil {
		panic(err)
	}
	// Output:
	// orders-sync 2 fire 10.0.0.5 timeout 120ms job: execution timed out
	// orders-sync 1 fire 10.0.0.5 failure 120ms no stock
	// next page: 1 execution
	// failed: 2
	// event: paused orders-sync
	// recorded 4 written 4 dropped 0
}
