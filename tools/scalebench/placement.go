package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/shardjob/shardjob/regcenter"
)

// loadTablePath is the namespace's load table (internal/layout.Placement,
// docs/design.md "Placement across jobs"): one node, each job's units per
// server and those unplaced, written by every reshard.
const loadTablePath = "/.placement"

// loadTable is what the bench reads of the load table: its wire form,
// {"servers": [...], "jobs": {"name": [units per server]}, "unplaced":
// {"name": n}}.
type loadTable struct {
	Servers  []string         `json:"servers"`
	Jobs     map[string][]int `json:"jobs"`
	Unplaced map[string]int   `json:"unplaced"`
}

// placedJobs counts the jobs whose every item the table places on a server
// (none unplaced), from items (a job's item count by name), and the units
// placed.
func (t loadTable) placedJobs(items map[string]int) (jobs, units int) {
	for name, counts := range t.Jobs {
		n := 0
		for _, c := range counts {
			n += c
		}
		units += n
		if want, ok := items[name]; ok && n == want && t.Unplaced[name] == 0 {
			jobs++
		}
	}
	return jobs, units
}

// placedOn returns the units the table places on server.
func (t loadTable) placedOn(server string) int {
	at := -1
	for i, s := range t.Servers {
		if s == server {
			at = i
		}
	}
	if at < 0 {
		return 0
	}
	n := 0
	for _, counts := range t.Jobs {
		if at < len(counts) {
			n += counts[at]
		}
	}
	return n
}

// readLoadTable reads and decodes the load table, and returns its size
// in bytes. A table not written yet is an empty one.
func readLoadTable(ctx context.Context, rc regcenter.Center) (loadTable, int, error) {
	data, _, err := rc.Get(ctx, loadTablePath)
	if errors.Is(err, regcenter.ErrNoNode) {
		return loadTable{}, 0, nil
	}
	if err != nil {
		return loadTable{}, 0, err
	}
	var t loadTable
	if len(data) == 0 {
		return t, 0, nil
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return loadTable{}, len(data), fmt.Errorf("the load table (%d bytes): %w", len(data), err)
	}
	return t, len(data), nil
}
