package jobtype_test

import (
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype"
)

func ExampleContextOf() {
	sc := job.ShardingContext{JobName: "orders", TaskID: "orders@0", FireTime: time.Unix(0, 0).UTC(),
		ShardingTotalCount: 2, Item: 1, ItemParameter: "Shanghai", Kind: job.KindFire, ServerID: "10.0.0.5"}
	fmt.Println(jobtype.ContextOf(sc).JSON())
	// Output: {"jobName":"orders","taskId":"orders@0","shardingTotalCount":2,"jobParameter":"","shardingItem":1,"shardingParameter":"Shanghai","fireTime":"1970-01-01T00:00:00Z","kind":"fire","serverId":"10.0.0.5"}
}
