// Package eventlog is the append-only execution log shared by the chaos
// harness and its instance processes: one JSON object per line, each line
// written with a single write(2) on a file opened O_APPEND, so lines from
// several processes never interleave and a process killed with SIGKILL
// leaves either its whole line or nothing.
//
// Every line has "ev" (the event kind) and "t" (wall clock, Unix
// nanoseconds, taken just before the line is written). The kinds and their
// other fields are listed with the constants below.
package eventlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Event kinds written by an instance process (inst, pid always set).
const (
	// ProcStart: the process started.
	ProcStart = "proc_start"
	// Ready: the scheduler started; the instance takes part.
	Ready = "ready"
	// Session: a registry session event, as the center's OnSession
	// delivers it (detail: the type as regcenter.SessionEventType names it
	// — suspended, reconnected, lost, new-session — a space, and the
	// session; err: for a lost session, why it ended). The analysis counts
	// the lost ones and explains duplicates with them.
	Session = "session"
	// Begin: an execution began (run, item, fire, kind).
	Begin = "begin"
	// End: the execution checked ShardingContext.StillOwner, which passed,
	// and committed its side effect: this line is the side effect.
	End = "end"
	// Abort: the execution stopped without a side effect: its context
	// ended or StillOwner failed (err says which).
	Abort = "abort"
	// Failed: the execution returned an error without a side effect, as
	// the harness asked it to (-fail-every): its fires count as run, and
	// only a retry of it (a Begin with a higher attempt) may run them
	// again.
	Failed = "failed"
	// Replaced: the execution stopped without a side effect because a later
	// fire of its item replaced it (the job's overlap policy is replace):
	// its fires count as run, and must not run again.
	Replaced = "replaced"
	// FireEnded: a fire (or make-up run) ended on the instance: every
	// item it ran there (items, logged as Begin logs them) was completed,
	// the completion's write returned (job's FireListener.FireEnded). The
	// analysis takes a committed run's completion to have returned at the
	// first such line of its process after its end that lists its item.
	FireEnded = "fire_ended"
	// ProcExit: the scheduler shut down gracefully (err: Shutdown's error).
	ProcExit = "proc_exit"
)

// Event kinds written by the harness.
const (
	// Config: the run's parameters (cfg).
	Config = "config"
	// MeasureStart: every instance is up; fires from here (plus the warm-up)
	// are checked.
	MeasureStart = "measure_start"
	// MeasureStop: faults are over and the cluster settled; fires up to here
	// (minus the cool-down) are checked. Instances are stopped after it.
	MeasureStop = "measure_stop"
	// FaultBegin and FaultEnd bracket a fault (fault, inst or member in
	// detail).
	FaultBegin = "fault_begin"
	FaultEnd   = "fault_end"
	// NoQuorumBegin and NoQuorumEnd bracket a window in which the ensemble
	// had no quorum.
	NoQuorumBegin = "noquorum_begin"
	NoQuorumEnd   = "noquorum_end"
	// Signal: the harness sent a signal to an instance (detail: its name).
	Signal = "signal"
	// Exit: the harness reaped an instance process (detail: how it ended).
	// Its time is an upper bound on the moment the process died.
	Exit = "exit"
	// StatusGone and StatusUp: the harness's own ZooKeeper watch saw the
	// instance's servers/{id}/status ephemeral node disappear or appear.
	StatusGone = "status_gone"
	StatusUp   = "status_up"
	// Note: free text from the harness (detail).
	Note = "note"
	// BackfillStart: the harness started a backfill of the first job over
	// the fires from Fire to Through (Unix ms); Detail is its id.
	// BackfillThrough: every item ran it through (Detail: its id).
	BackfillStart   = "backfill_start"
	BackfillThrough = "backfill_through"
)

// RunConfig is the payload of a Config event.
type RunConfig struct {
	Seed             int64    `json:"seed"`
	Instances        int      `json:"instances"`
	InstanceIDs      []string `json:"instance_ids"`
	Items            int      `json:"items"`
	PeriodMS         int64    `json:"period_ms"`
	WorkMS           int64    `json:"work_ms"`
	SessionTimeoutMS int64    `json:"session_timeout_ms"`
	WarmupMS         int64    `json:"warmup_ms"`
	CooldownMS       int64    `json:"cooldown_ms"`
	DurationMS       int64    `json:"duration_ms"`
	Partition        bool     `json:"partition"`
	// Registry is "zookeeper" or "etcd"; logs written before runs on etcd
	// existed have none, and were on ZooKeeper.
	Registry string `json:"registry,omitempty"`
	// Overlap is the test job's overlap policy ("" or "replace").
	Overlap string `json:"overlap,omitempty"`
	// Chain is how many jobs the instances run, each after the one before
	// (0 or 1: one job). Items then counts the items of every job:
	// JobItems per job, job k's item i logged as k*JobItems+i.
	Chain    int `json:"chain,omitempty"`
	JobItems int `json:"job_items,omitempty"`
	// RecordIntervalMS is the instances' record interval
	// (job.WithRecordInterval): how long an item's completed record may
	// wait unwritten, and so how far before a crash a run may be that the
	// crash makes run again. Logs written before it was recorded have
	// none (nil), and no bound is checked on them.
	RecordIntervalMS *int64 `json:"record_interval_ms,omitempty"`
	// FireJitterMS is the jobs' schedule jitter (job.Config.Jitter). The
	// log's fire times are the schedule's times before it, the fires the
	// analysis counts on the period's grid.
	FireJitterMS int64 `json:"fire_jitter_ms,omitempty"`
	// FailEvery is the harness's -fail-every: every this many executions
	// of an instance failed at their first attempt, and were retried.
	FailEvery int `json:"fail_every,omitempty"`
}

// Event is one line of the log. Fields an event kind does not use are
// omitted; Item is a pointer so that item 0 is written.
type Event struct {
	Ev   string `json:"ev"`
	T    int64  `json:"t"`
	Inst string `json:"inst,omitempty"`
	PID  int    `json:"pid,omitempty"`
	Run  string `json:"run,omitempty"`
	Item *int   `json:"item,omitempty"`
	// Items are the items of a FireEnded line.
	Items []int `json:"items,omitempty"`
	Fire  int64 `json:"fire,omitempty"`
	// Through is the latest fire (Unix ms) an execution stands for
	// (job.ShardingContext.Through); 0 in logs written before it existed.
	Through int64  `json:"through,omitempty"`
	Kind    string `json:"kind,omitempty"`
	// Attempt is a Begin's try of its fire (job.ShardingContext.Attempt):
	// 1 for the first, more for a retry; 0 in logs written before it.
	Attempt int        `json:"attempt,omitempty"`
	Err     string     `json:"err,omitempty"`
	Fault   string     `json:"fault,omitempty"`
	Detail  string     `json:"detail,omitempty"`
	Cfg     *RunConfig `json:"cfg,omitempty"`
}

// ItemOf returns e's item, or -1 when it has none.
func (e Event) ItemOf() int {
	if e.Item == nil {
		return -1
	}
	return *e.Item
}

// Time returns e.T as a time.Time.
func (e Event) Time() time.Time { return time.Unix(0, e.T) }

// Item returns a pointer to i, for Event.Item.
func Item(i int) *int { return &i }

// Writer appends events to a log file. It is safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	f  *os.File
}

// Open opens (creating if needed) the log at path for appending.
func Open(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f}, nil
}

// Write appends e as one line with one write(2). A zero e.T is set to now.
func (w *Writer) Write(e Event) error {
	if e.T == 0 {
		e.T = time.Now().UnixNano()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return os.ErrClosed
	}
	n, err := w.f.Write(b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	return err
}

// Close closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// Read parses a log. Lines that are not valid events (there should be
// none) are skipped and counted in bad.
func Read(r io.Reader) (events []Event, bad int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var e Event
		if json.Unmarshal(line, &e) != nil || e.Ev == "" {
			bad++
			continue
		}
		events = append(events, e)
	}
	return events, bad, sc.Err()
}

// ReadFile parses the log at path.
func ReadFile(path string) ([]Event, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	ev, bad, err := Read(f)
	if err != nil {
		return ev, bad, fmt.Errorf("%s: %w", path, err)
	}
	if len(ev) == 0 && bad == 0 {
		return nil, 0, errors.New(path + ": empty log")
	}
	return ev, bad, nil
}
