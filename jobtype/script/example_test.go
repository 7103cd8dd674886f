package script_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype/script"
)

func ExampleNew() {
	// The command is an argument list; the sharding context is appended
	// as its last argument and set in SHARDJOB_SHARDING_CONTEXT.
	j, err := script.New(script.Config{
		Command: []string{"/bin/sh", "-c", `echo "no route to $1" >&2; exit 3`, "sync"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = j.Execute(context.Background(), job.ShardingContext{JobName: "sync", Item: 0, ShardingTotalCount: 1})
	fmt.Println(err)
	// Output: script: command exited with code 3: no route to {"jobName":"sync","taskId":"","shardingTotalCount":1,"jobParameter":"","shardingItem":0,"shardingParameter":"","fireTime":"0001-01-01T00:00:00Z","kind":"","serverId":""}
}
