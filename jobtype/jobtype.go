// Package jobtype holds what the job types built on [job.Job] share: the
// sharding context as the JSON document that script and HTTP jobs hand to
// the programs they call.
//
// The types themselves live in subpackages: [github.com/shardjob/shardjob/jobtype/script]
// runs a command per item, [github.com/shardjob/shardjob/jobtype/httpjob]
// sends an HTTP request per item, and
// [github.com/shardjob/shardjob/jobtype/dataflow] fetches and processes
// typed batches. Each is an ordinary [job.Job]: add it to a scheduler as
// any other, or let [github.com/shardjob/shardjob/jobfile] build it from a
// YAML file.
package jobtype

import (
	"encoding/json"
	"time"

	"github.com/shardjob/shardjob/job"
)

// Context is the sharding context of one execution as script and HTTP jobs
// pass it on: the keys ElasticJob's script jobs receive (jobName, taskId,
// shardingTotalCount, jobParameter, shardingItem, shardingParameter), plus
// the fire time, the execution's kind and the server id.
type Context struct {
	// The fields are those of job.ShardingContext of the same meaning;
	// ShardingItem is its Item and ShardingParameter its ItemParameter.
	JobName            string `json:"jobName"`
	TaskID             string `json:"taskId"`
	ShardingTotalCount int    `json:"shardingTotalCount"`
	JobParameter       string `json:"jobParameter"`
	ShardingItem       int    `json:"shardingItem"`
	ShardingParameter  string `json:"shardingParameter"`
	// ShardingKey is the item's key (job.ShardingContext.ItemKey), for a
	// job whose items come from data. Left out when empty.
	ShardingKey string    `json:"shardingKey,omitempty"`
	FireTime    time.Time `json:"fireTime"`
	// Through is the latest fire the run stands for: a make-up run
	// (misfire, failover) covers every fire from FireTime through Through.
	// Left out of the JSON when zero.
	Through  time.Time `json:"through,omitzero"`
	Kind     string    `json:"kind"`
	ServerID string    `json:"serverId"`
	// Attempt is the run's try of its fire (job.ShardingContext.Attempt):
	// 1, or more for a retry (job.Config.Retry). Left out when zero.
	Attempt int `json:"attempt,omitzero"`
}

// ContextOf returns sc as a Context.
func ContextOf(sc job.ShardingContext) Context {
	return Context{
		JobName:            sc.JobName,
		TaskID:             sc.TaskID,
		ShardingTotalCount: sc.ShardingTotalCount,
		JobParameter:       sc.JobParameter,
		ShardingItem:       sc.Item,
		ShardingParameter:  sc.ItemParameter,
		ShardingKey:        sc.ItemKey,
		FireTime:           sc.FireTime,
		Through:            sc.Through,
		Kind:               string(sc.Kind),
		ServerID:           sc.ServerID,
		Attempt:            sc.Attempt,
	}
}

// JSON returns c as one line of JSON. Encoding a Context cannot fail.
func (c Context) JSON() string {
	data, err := json.Marshal(c)
	if err != nil {
		panic("jobtype: encoding a Context: " + err.Error()) // only strings, ints and a time
	}
	return string(data)
}
