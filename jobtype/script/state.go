package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/internal/jobhook"
	"github.com/shardjob/shardjob/job"
)

// groupRecord is one running process group, as recorded in a state
// directory while its item runs.
type groupRecord struct {
	Job   string `json:"job"`
	Item  int    `json:"item"`
	Fire  int64  `json:"fire"` // unix ms of the fire the execution stood for
	Task  string `json:"taskId"`
	PID   int    `json:"pid"`   // the first process; also the group's id
	Start uint64 `json:"start"` // its start time, clock ticks after boot (/proc/PID/stat field 22)

	file string
}

// stateDir is a directory of group records.
type stateDir struct{ dir string }

func openStateDir(dir string) (*stateDir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: stateDir: %w", ErrInvalidConfig, err)
	}
	return &stateDir{dir: dir}, nil
}

// record writes the record of the group whose first process is pid.
func (d *stateDir) record(pid int, sc job.ShardingContext) (*groupRecord, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return nil, err
	}
	rec := &groupRecord{Job: sc.JobName, Item: sc.Item, Fire: sc.FireTime.UnixMilli(), Task: sc.TaskID, PID: pid, Start: st.start}
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	rec.file = filepath.Join(d.dir, fmt.Sprintf("%s.%d.%d.json", sc.JobName, sc.Item, pid))
	tmp := rec.file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, rec.file); err != nil {
		return nil, errors.Join(err, os.Remove(tmp))
	}
	return rec, nil
}

func (d *stateDir) remove(rec *groupRecord) error {
	if err := os.Remove(rec.file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// debts records that an item must run again: the scheduler's misfire
// nodes (schedulerDebts), or a test's record.
type debts interface {
	OweMisfire(ctx context.Context, job string, item int, since time.Time) error
}

// schedulerDebts owes items misfires in the registry, through the
// scheduler the jobs are added to.
type schedulerDebts struct{ s *job.Scheduler }

func (d schedulerDebts) OweMisfire(ctx context.Context, name string, item int, since time.Time) error {
	return jobhook.OweMisfire(d.s, ctx, name, item, since)
}

// Orphan is one process group a previous incarnation left recorded.
type Orphan struct {
	// Job and Item are the execution it ran for; Fire is the fire.
	Job  string
	Item int
	Fire time.Time
	// PID is the group's id (its first process's pid).
	PID int
	// Killed is how many of its processes were still running and were
	// killed; 0 when the group was gone already or its pid had been
	// reused by an unrelated process (which is left alone).
	Killed int
}

// Reap kills the process groups recorded in dir by an earlier process of
// this server that did not end them (it was killed), waits until they are
// gone, records each of their items as owed a misfire in sched (the
// item's misfire node, paid with one make-up run at the item's next fire
// on whichever instance holds it), and removes the records. Call it once
// at start, after adding the jobs and
// before starting the scheduler, with the StateDir of the script jobs; dir
// must belong to this server id alone. A record whose process id now
// names another process (compared by start time) is not signalled. A
// missing dir is not an error. Reap returns what it found; an error leaves
// the records it could not settle in place for the next try.
func Reap(ctx context.Context, dir string, sched *job.Scheduler, log *slog.Logger) ([]Orphan, error) {
	if sched == nil {
		return nil, fmt.Errorf("%w: reap: no scheduler to owe the killed groups' items to", ErrInvalidConfig)
	}
	return reap(ctx, dir, schedulerDebts{sched}, log)
}

// reap is Reap with the debts recorded through debts.
func reap(ctx context.Context, dir string, debts debts, log *slog.Logger) ([]Orphan, error) {
	if !supported {
		return nil, ErrUnsupported
	}
	if log == nil {
		log = slog.Default()
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("script: reading state dir: %w", err)
	}
	var found []Orphan
	var errs []error
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(dir, name)
		if strings.HasSuffix(name, ".tmp") {
			// Written by a process killed before it renamed it: the group
			// was never recorded, and its first process died with the
			// instance (parent-death signal).
			if err := os.Remove(path); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var rec groupRecord
		if err := json.Unmarshal(data, &rec); err != nil || rec.PID <= 1 || rec.Job == "" {
			log.Warn("script: unreadable process group record; removed", "file", path, "err", err)
			if err := os.Remove(path); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		o, err := reapGroup(ctx, rec)
		if err != nil {
			errs = append(errs, fmt.Errorf("script: job %q item %d: %w", rec.Job, rec.Item, err))
			continue
		}
		log.Warn("script: a previous incarnation left a process group; killed it, the item runs again as a misfire",
			"job", rec.Job, "item", rec.Item, "fire", o.Fire, "pgid", rec.PID, "killed", o.Killed)
		if err := debts.OweMisfire(ctx, rec.Job, rec.Item, o.Fire); errors.Is(err, job.ErrUnknownJob) {
			// The job is no longer defined here: nothing to run again.
			log.Warn("script: the killed process group's job is not added here; its item is not owed", "job", rec.Job, "item", rec.Item)
		} else if err != nil {
			errs = append(errs, fmt.Errorf("script: recording job %q item %d as a misfire: %w", rec.Job, rec.Item, err))
			continue
		}
		if err := os.Remove(path); err != nil {
			errs = append(errs, err)
			continue
		}
		found = append(found, o)
	}
	return found, errors.Join(errs...)
}

// reapGroup kills what is left of rec's group and waits until it is gone.
func reapGroup(ctx context.Context, rec groupRecord) (Orphan, error) {
	o := Orphan{Job: rec.Job, Item: rec.Item, Fire: time.UnixMilli(rec.Fire), PID: rec.PID}
	lead, err := readProcStat(rec.PID)
	switch {
	case err == nil && lead.start != rec.Start:
		// The pid names another process: while any process of the
		// recorded group lived, the kernel would not have reused it as a
		// pid, so that group is gone.
		return o, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return o, err
	}
	members, err := groupMembers(rec.PID)
	if err != nil {
		return o, err
	}
	for _, m := range members {
		if m.start < rec.Start {
			// Older than the group's first process: not a member we made.
			return o, fmt.Errorf("process group %d has a process older than the recorded one; left alone", rec.PID)
		}
	}
	if len(members) == 0 {
		return o, nil
	}
	o.Killed = len(members)
	if err := killGroup(rec.PID, syscall.SIGKILL); err != nil {
		return o, err
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		left, err := groupMembers(rec.PID)
		if err != nil {
			return o, err
		}
		if len(left) == 0 {
			return o, nil
		}
		select {
		case <-ctx.Done():
			return o, fmt.Errorf("process group %d still has %d processes: %w", rec.PID, len(left), context.Cause(ctx))
		case <-tick.C:
		}
	}
}
