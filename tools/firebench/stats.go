package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// execRec is one execution an instance reported.
type execRec struct {
	inst    int    // index of the reporting instance
	job     string // job name
	item    int
	fire    int64 // scheduled fire time, unix ms
	entered int64 // Execute entered, unix ns
	kind    string
	// through is the latest fire the run stands for, unix ms: a make-up
	// run stands for every fire from fire through it (ShardingContext.Through).
	through int64
}

// latencyMS is the time from the scheduled fire to Execute entered.
func (e execRec) latencyMS() float64 {
	return float64(e.entered-e.fire*int64(time.Millisecond)) / float64(time.Millisecond)
}

// parseExecLine parses an instance's execution line
// "E <job> <item> <fire ms> <entered ns> <kind>".
func parseExecLine(line string) (execRec, error) {
	f := strings.Fields(line)
	if (len(f) != 6 && len(f) != 7) || f[0] != "E" {
		return execRec{}, fmt.Errorf("not an execution line: %q", line)
	}
	item, err := strconv.Atoi(f[2])
	if err != nil {
		return execRec{}, fmt.Errorf("item in %q: %w", line, err)
	}
	fire, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return execRec{}, fmt.Errorf("fire time in %q: %w", line, err)
	}
	entered, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil {
		return execRec{}, fmt.Errorf("entered time in %q: %w", line, err)
	}
	e := execRec{job: f[1], item: item, fire: fire, entered: entered, kind: f[5], through: fire}
	if len(f) == 7 {
		if e.through, err = strconv.ParseInt(f[6], 10, 64); err != nil || e.through < fire {
			return execRec{}, fmt.Errorf("through time in %q: %v", line, err)
		}
	}
	return e, nil
}
