package admin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// Job statuses, as reported by [Admin.Jobs] and [Admin.Status].
const (
	// StatusOK: nothing needs attention.
	StatusOK = "ok"
	// StatusCrashed: a server holds items but has no status node: its
	// instance is gone without leaving, and its items do not run until the
	// leader reshards (or, with failover, an idle instance takes them).
	StatusCrashed = "crashed"
	// StatusDisabled: the config says disabled, or every server is
	// disabled: nothing fires.
	StatusDisabled = "disabled"
	// StatusResharding: a reshard is due (leader/sharding/necessary) and
	// happens at the next fire.
	StatusResharding = "resharding"
	// StatusEnded: the schedule has no further fire (its end has passed,
	// its limit is used up): nothing fires again until the config
	// changes. NextFireNote says so.
	StatusEnded = "ended"
)

// Payloads of the execution nodes, as the instances write them (JSON).
type runningMark struct {
	Server  string `json:"server"`
	Fire    int64  `json:"fire"`
	Kind    string `json:"kind"`
	Begin   int64  `json:"begin"`
	Session string `json:"session"`
}

type completedMark struct {
	Server string `json:"server"`
	Fire   int64  `json:"fire"`
	Since  int64  `json:"since,omitempty"`
	Kind   string `json:"kind"`
	Begin  int64  `json:"begin"`
	End    int64  `json:"end"`
	Error  string `json:"error,omitempty"`
}

type misfireMark struct {
	Since int64 `json:"since"`
}

// JobSummary is one line of [Admin.Jobs].
type JobSummary struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Cron   string `json:"cron"`
	// TimeZone is the zone Cron is evaluated in; "" is each instance's
	// local zone.
	TimeZone           string `json:"timeZone,omitempty"`
	ShardingTotalCount int    `json:"shardingTotalCount"`
	// Registered counts the server entries; Online those with a status
	// node (an instance is running the job there).
	Registered int    `json:"registered"`
	Online     int    `json:"online"`
	Leader     string `json:"leader,omitempty"`
	// LastFire is the latest fire any item completed.
	LastFire *time.Time `json:"lastFire,omitempty"`
	// NextFire is the schedule's next fire; absent when the job is disabled
	// or its config unreadable, or when there is none (NextFireNote says
	// why).
	NextFire *time.Time `json:"nextFire,omitempty"`
	// NextFireNote says why an enabled job has no NextFire: "no further
	// fires" (the schedule has ended: status "ended") or "no fire within
	// 100 years".
	NextFireNote string `json:"nextFireNote,omitempty"`
	// ConfigError says why the config node could not be decoded (the
	// instances keep running with their last good config meanwhile).
	ConfigError string `json:"configError,omitempty"`
	// PausedUntil is the config's pause, while it lasts: the job fires on
	// no instance before it. PauseNote says why.
	PausedUntil *time.Time `json:"pausedUntil,omitempty"`
	PauseNote   string     `json:"pauseNote,omitempty"`
	// After lists the jobs this one runs after (its parents).
	After []string `json:"after,omitempty"`
}

// ParentStatus is where a parent of a job stands: its last completed fire,
// against which the job's own shows how far the chain has come.
type ParentStatus struct {
	Name     string     `json:"name"`
	Status   string     `json:"status"`
	LastFire *time.Time `json:"lastFire,omitempty"`
}

// JobStatus is the detailed state of one job, from [Admin.Status].
type JobStatus struct {
	JobSummary
	// Disabled is the config's disabled flag.
	Disabled    bool   `json:"disabled"`
	Failover    bool   `json:"failover"`
	Description string `json:"description,omitempty"`
	// Resharding: leader/sharding/necessary exists.
	Resharding bool `json:"resharding"`
	// DisabledItems are kept out of every fire.
	DisabledItems []int          `json:"disabledItems"`
	Servers       []ServerStatus `json:"servers"`
	Items         []ItemStatus   `json:"items"`
	// Parents are the jobs in After, each with its last fire ("gone" when
	// the job is not in the namespace).
	Parents []ParentStatus `json:"parents,omitempty"`
	// Problems are nodes no instance wrote or owns that block or confuse
	// the job — garbage assignments, persistent running or status nodes,
	// unreadable failover entries, marks of offline servers — each with
	// what the instances do about it. Empty when all is well.
	Problems []string `json:"problems"`
}

// ServerStatus is one server of a job.
type ServerStatus struct {
	ID string `json:"id"`
	// Host is the host name the instance registered from.
	Host string `json:"host,omitempty"`
	// Online: the status node exists.
	Online bool `json:"online"`
	// State is the status node's content (instances write READY; the
	// running items are in Running).
	State    string `json:"state,omitempty"`
	Leader   bool   `json:"leader"`
	Disabled bool   `json:"disabled"`
	Paused   bool   `json:"paused"`
	// ShutdownPending: the shutdown flag is set (the instance leaves the
	// job; the flag is cleared when it starts again).
	ShutdownPending bool `json:"shutdownPending"`
	// TriggerPending: a trigger flag waits to be picked up.
	TriggerPending bool `json:"triggerPending"`
	// Items are the items assigned to the server.
	Items []int `json:"items"`
	// Running are the items whose running node names this server.
	Running []int `json:"running"`
}

// ItemStatus is one sharding item of a job.
type ItemStatus struct {
	Item int `json:"item"`
	// Server is the server the item is assigned to ("" if none).
	Server string `json:"server,omitempty"`
	// Disabled: the item is in the job's disabled-items list.
	Disabled bool `json:"disabled"`
	// Running is the execution in progress, if any.
	Running *Execution `json:"running,omitempty"`
	// HeldBy is the server that keeps the item's running mark between its
	// runs (a held mark: its run has completed, and the server holds the
	// item for the next fires), "" when none does. A run on it in progress
	// shows in that instance's own figures, not here.
	HeldBy string `json:"heldBy,omitempty"`
	// Last is the last completed execution, if any.
	Last *Completion `json:"last,omitempty"`
	// MisfireSince is set when a misfire is pending: the item owes one run
	// for fires it missed since then.
	MisfireSince *time.Time `json:"misfireSince,omitempty"`
	// Failover is set when the item is queued for failover.
	Failover *FailoverState `json:"failover,omitempty"`
}

// Execution is an item executing now.
type Execution struct {
	Server string    `json:"server"`
	Kind   string    `json:"kind"`
	Fire   time.Time `json:"fire"`
	Begin  time.Time `json:"begin"`
}

// Completion is an item's last completed execution of the schedule (a
// triggered run is extra and does not replace it).
type Completion struct {
	Server string `json:"server"`
	Kind   string `json:"kind"`
	// Fire is the latest scheduled fire the execution covers.
	Fire time.Time `json:"fire"`
	// Since is set when the execution (a misfire or failover run) made up
	// for several fires: the earliest of them.
	Since      *time.Time `json:"since,omitempty"`
	Begin      time.Time  `json:"begin"`
	End        time.Time  `json:"end"`
	DurationMS int64      `json:"durationMs"`
	// Error is the job's error, "" when it succeeded.
	Error string `json:"error,omitempty"`
}

// FailoverState is an item waiting in (or claimed from) the failover queue.
type FailoverState struct {
	// From is the departed server that held the item.
	From string `json:"from"`
	// Fire is the earliest fire the item has not completed.
	Fire time.Time `json:"fire"`
	// ClaimedBy is the server running the item as a failover, "" while
	// nobody has claimed it.
	ClaimedBy string `json:"claimedBy,omitempty"`
}

// snapshot is what was read of one job.
type snapshot struct {
	name      string
	cfg       *Config
	cfgErr    error
	servers   []*serverSnap
	leader    string
	necessary bool
	disabled  []int
	items     map[int]*itemSnap
	queue     map[int]failover.Entry

	mu       sync.Mutex
	problems []string
}

// problem records something wrong found while reading.
func (s *snapshot) problem(format string, a ...any) {
	s.mu.Lock()
	s.problems = append(s.problems, fmt.Sprintf(format, a...))
	s.mu.Unlock()
}

type serverSnap struct {
	id       string
	host     string
	flags    map[string]bool
	state    string
	sharding []int
}

type itemSnap struct {
	running   *runningMark
	completed *completedMark
	misfire   *misfireMark
	claimedBy string
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// get reads a node; a missing node is (nil, false, nil).
func (a *Admin) get(ctx context.Context, p string) ([]byte, bool, error) {
	data, _, err := a.rc.Get(ctx, p)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// children lists a node's children; a missing node has none.
func (a *Admin) children(ctx context.Context, p string) ([]string, error) {
	kids, err := a.rc.Children(ctx, p)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil, nil
	}
	return kids, err
}

// jobExists reports whether the job's node exists.
func (a *Admin) jobExists(ctx context.Context, job string) (bool, error) {
	if err := checkName("job", job); err != nil {
		return false, err
	}
	ok, _, err := a.rc.Exists(ctx, layout.Job(job).Root())
	return ok, err
}

// requireJob returns ErrUnknownJob unless the job's node exists.
func (a *Admin) requireJob(ctx context.Context, job string) error {
	ok, err := a.jobExists(ctx, job)
	if err != nil {
		return err
	}
	if !ok {
		return a.unknownJob(ctx, job)
	}
	return nil
}

// jobNames lists the jobs of the namespace, sorted; names starting with "."
// are internal nodes, not jobs.
func (a *Admin) jobNames(ctx context.Context) ([]string, error) {
	kids, err := a.children(ctx, "/")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range kids {
		if !strings.HasPrefix(k, ".") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}

// itemNames parses numeric child names, sorted.
func itemNames(kids []string) []int {
	var out []int
	for _, k := range kids {
		if n, err := strconv.Atoi(k); err == nil && n >= 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// read takes a snapshot of job. detail reads every execution node and the
// failover queue; without it only the completed marks are read.
func (a *Admin) read(ctx context.Context, job string, detail bool) (*snapshot, error) {
	if err := a.requireJob(ctx, job); err != nil {
		return nil, err
	}
	paths := layout.Job(job)
	s := &snapshot{name: job, items: map[int]*itemSnap{}, queue: map[int]failover.Entry{}}
	var (
		cfgData          []byte
		cfgFound         bool
		serverIDs, execs []string
		queued           []string
		disabledData     []byte
	)
	err := eachErr(7, 7, func(i int) error {
		var err error
		switch i {
		case 0:
			cfgData, cfgFound, err = a.get(ctx, paths.Config())
		case 1:
			serverIDs, err = a.children(ctx, paths.Servers())
		case 2:
			var b []byte
			b, _, err = a.get(ctx, paths.ElectionHost())
			s.leader = string(b)
		case 3:
			s.necessary, _, err = a.rc.Exists(ctx, paths.Necessary())
		case 4:
			disabledData, _, err = a.get(ctx, paths.DisabledItems())
		case 5:
			execs, err = a.children(ctx, paths.Execution())
		case 6:
			if detail {
				queued, err = a.children(ctx, paths.FailoverItems())
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	switch {
	case !cfgFound:
		s.cfgErr = errors.New("no config node (the job is being removed, or was never started)")
	default:
		cfg, err := a.decodeCached(ctx, job, cfgData)
		if err != nil {
			s.cfgErr = err
		} else {
			s.cfg = &cfg
		}
	}
	if items, err := layout.ParseItems(string(disabledData)); err == nil {
		s.disabled = items
	}

	slices.Sort(serverIDs)
	s.servers = make([]*serverSnap, len(serverIDs))
	err = eachErr(len(serverIDs), 16, func(i int) error {
		sv := &serverSnap{id: serverIDs[i], flags: map[string]bool{}}
		s.servers[i] = sv
		kids, err := a.children(ctx, paths.Server(sv.id))
		if err != nil {
			return err
		}
		for _, k := range kids {
			sv.flags[k] = true
		}
		host, _, err := a.get(ctx, paths.Server(sv.id))
		if err != nil {
			return err
		}
		sv.host = string(host)
		if sv.flags[layout.Status] {
			st, stat, err := a.rc.Get(ctx, paths.Flag(sv.id, layout.Status))
			if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
				return err
			}
			sv.state = string(st)
			if err == nil && stat.EphemeralOwner == 0 {
				s.problem("server %s: persistent status node, not an instance's (the leader's next reshard treats it as offline and removes it)", sv.id)
			}
		}
		if sv.flags[layout.Sharding] {
			data, _, err := a.get(ctx, paths.Flag(sv.id, layout.Sharding))
			if err != nil {
				return err
			}
			var perr error
			if sv.sharding, perr = layout.ParseItems(string(data)); perr != nil {
				s.problem("server %s: garbage assignment %q (the instance asks the leader to reshard at its next fire)", sv.id, oneLine(string(data)))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	items := itemNames(execs)
	var mu sync.Mutex
	err = eachErr(len(items), 16, func(i int) error {
		item := items[i]
		is := &itemSnap{}
		nodes := []string{layout.Completed}
		if detail {
			kids, err := a.children(ctx, paths.Item(item))
			if err != nil {
				return err
			}
			nodes = kids
		}
		for _, n := range nodes {
			data, stat, err := a.rc.Get(ctx, paths.ItemNode(item, n))
			if errors.Is(err, regcenter.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			switch n {
			case layout.Running:
				var m runningMark
				if json.Unmarshal(data, &m) == nil {
					is.running = &m
				}
				if stat.EphemeralOwner == 0 {
					s.problem("item %d: persistent running node, held by no instance (the item's next run removes it)", item)
				} else if is.running == nil {
					s.problem("item %d: unreadable running node %q (held until its session ends)", item, oneLine(string(data)))
				}
			case layout.Completed:
				var m completedMark
				if json.Unmarshal(data, &m) == nil {
					is.completed = &m
				}
			case layout.Misfire:
				var m misfireMark
				if json.Unmarshal(data, &m) == nil {
					is.misfire = &m
				} else {
					is.misfire = &misfireMark{}
				}
			case layout.Failover:
				is.claimedBy = string(data)
			}
		}
		mu.Lock()
		s.items[item] = is
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}

	queuedItems := itemNames(queued)
	if len(queuedItems) < len(queued) {
		for _, name := range queued {
			if n, err := strconv.Atoi(name); err != nil || n < 0 {
				s.problem("failover queue: entry %q names no item (ignored by the instances)", name)
			}
		}
	}
	err = eachErr(len(queuedItems), 16, func(i int) error {
		item := queuedItems[i]
		data, ok, err := a.get(ctx, paths.FailoverItem(item))
		if err != nil || !ok {
			return err
		}
		var e failover.Entry
		if err := json.Unmarshal(data, &e); err != nil || e.Fire <= 0 {
			s.problem("failover queue: item %d has an unreadable entry %q (the claimer runs it once for the latest fire and removes it)", item, oneLine(string(data)))
		}
		e.Item = item
		mu.Lock()
		s.queue[item] = e
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// status is the job's one-word status.
func (s *snapshot) status() string {
	online, onlineDisabled, allDisabled := 0, 0, len(s.servers) > 0
	for _, sv := range s.servers {
		if len(sv.sharding) > 0 && !sv.flags[layout.Status] {
			return StatusCrashed
		}
		if sv.flags[layout.Status] {
			online++
			if sv.flags[layout.Disabled] {
				onlineDisabled++
			}
		}
		if !sv.flags[layout.Disabled] {
			allDisabled = false
		}
	}
	if (s.cfg != nil && s.cfg.Disabled) || allDisabled || (online > 0 && onlineDisabled == online) {
		return StatusDisabled
	}
	if s.necessary {
		return StatusResharding
	}
	return StatusOK
}

func (s *snapshot) summary(now time.Time) JobSummary {
	sum := JobSummary{Name: s.name, Status: s.status(), Registered: len(s.servers), Leader: s.leader}
	for _, sv := range s.servers {
		if sv.flags[layout.Status] {
			sum.Online++
		}
	}
	if s.cfg != nil {
		sum.Cron, sum.TimeZone, sum.ShardingTotalCount = s.cfg.Cron, s.cfg.TimeZone, s.cfg.ShardingTotalCount
		if !s.cfg.Disabled && s.cfg.NextFire != nil {
			n, err := s.cfg.NextFire(now)
			switch {
			case err == nil && !n.IsZero():
				sum.NextFire = &n
			case errors.Is(err, job.ErrScheduleEnded):
				sum.NextFireNote = "no further fires"
				if sum.Status == StatusOK || sum.Status == StatusResharding {
					// A reshard waits for a fire that never comes.
					sum.Status = StatusEnded
				}
			case errors.Is(err, job.ErrNoFireWithinHorizon):
				sum.NextFireNote = fmt.Sprintf("no fire within %d years", job.ScheduleHorizonYears)
			}
		} else if !s.cfg.Disabled && s.cfg.Next != nil {
			if n := s.cfg.Next(now); !n.IsZero() {
				sum.NextFire = &n
			}
		}
		if p := s.cfg.PausedUntil; p.After(now) {
			sum.PausedUntil, sum.PauseNote = &p, s.cfg.PauseNote
		}
		sum.After = s.cfg.After
	}
	if s.cfgErr != nil {
		sum.ConfigError = oneLine(s.cfgErr.Error())
	}
	var last int64
	for _, is := range s.items {
		if is.completed != nil && is.completed.Fire > last {
			last = is.completed.Fire
		}
	}
	if last > 0 {
		t := msTime(last)
		sum.LastFire = &t
	}
	return sum
}

// Jobs summarizes every job of the namespace, sorted by name.
func (a *Admin) Jobs(ctx context.Context) ([]JobSummary, error) {
	names, err := a.jobNames(ctx)
	if err != nil {
		return nil, err
	}
	now := a.now()
	out := make([]JobSummary, len(names))
	gone := make([]bool, len(names))
	err = eachErr(len(names), 8, func(i int) error {
		s, err := a.read(ctx, names[i], false)
		if errors.Is(err, ErrUnknownJob) {
			gone[i] = true // removed while we looked
			return nil
		}
		if err != nil {
			return fmt.Errorf("job %q: %w", names[i], err)
		}
		out[i] = s.summary(now)
		return nil
	})
	if err != nil {
		return nil, err
	}
	kept := out[:0]
	for i, s := range out {
		if !gone[i] {
			kept = append(kept, s)
		}
	}
	return kept, nil
}

// Status reports the detailed state of job.
func (a *Admin) Status(ctx context.Context, job string) (JobStatus, error) {
	s, err := a.read(ctx, job, true)
	if err != nil {
		return JobStatus{}, err
	}
	st := JobStatus{JobSummary: s.summary(a.now()), Resharding: s.necessary, DisabledItems: s.disabled}
	if st.DisabledItems == nil {
		st.DisabledItems = []int{}
	}
	if s.cfg != nil {
		st.Disabled, st.Failover, st.Description = s.cfg.Disabled, s.cfg.Failover, s.cfg.Description
		for _, p := range s.cfg.After {
			ps := ParentStatus{Name: p, Status: "gone"}
			if snap, err := a.read(ctx, p, false); err == nil {
				sum := snap.summary(a.now())
				ps.Status, ps.LastFire = sum.Status, sum.LastFire
			} else if errors.Is(err, ErrUnknownJob) {
				s.problem("parent %q is gone: every fire of this job waits for it and is skipped (remove %q from after:, or define the parent again)", p, p)
			} else {
				return JobStatus{}, err
			}
			st.Parents = append(st.Parents, ps)
		}
	}
	online := map[string]bool{}
	for _, sv := range s.servers {
		online[sv.id] = sv.flags[layout.Status]
	}
	for item, is := range s.items {
		if m := is.running; m != nil && !online[m.Server] {
			s.problem("item %d: running node of server %s, which is offline (held until that session ends)", item, m.Server)
		}
	}
	st.Problems = slices.Clone(s.problems)
	slices.Sort(st.Problems)
	if st.Problems == nil {
		st.Problems = []string{}
	}
	assigned := map[int]string{}
	running := map[string][]int{}
	for item, is := range s.items {
		if is.running != nil && !heldIdle(is.running, is.completed) {
			running[is.running.Server] = append(running[is.running.Server], item)
		}
	}
	for _, sv := range s.servers {
		ss := ServerStatus{
			ID: sv.id, Host: sv.host, Online: sv.flags[layout.Status], State: sv.state,
			Leader:   sv.id == s.leader && s.leader != "",
			Disabled: sv.flags[layout.Disabled], Paused: sv.flags[layout.Paused],
			ShutdownPending: sv.flags[layout.Shutdown], TriggerPending: sv.flags[layout.Trigger],
			Items: sv.sharding, Running: running[sv.id],
		}
		if ss.Items == nil {
			ss.Items = []int{}
		}
		slices.Sort(ss.Running)
		if ss.Running == nil {
			ss.Running = []int{}
		}
		for _, it := range sv.sharding {
			assigned[it] = sv.id
		}
		st.Servers = append(st.Servers, ss)
	}
	if st.Servers == nil {
		st.Servers = []ServerStatus{}
	}

	// Every item of the config, plus any item with nodes outside it (left
	// over from a larger item count).
	set := map[int]bool{}
	if s.cfg != nil {
		for i := range s.cfg.ShardingTotalCount {
			set[i] = true
		}
	}
	for it := range s.items {
		set[it] = true
	}
	for it := range s.queue {
		set[it] = true
	}
	disabled := map[int]bool{}
	for _, it := range s.disabled {
		disabled[it] = true
	}
	items := make([]int, 0, len(set))
	for it := range set {
		items = append(items, it)
	}
	slices.Sort(items)
	st.Items = make([]ItemStatus, 0, len(items))
	for _, it := range items {
		is := ItemStatus{Item: it, Server: assigned[it], Disabled: disabled[it]}
		if x := s.items[it]; x != nil {
			if m := x.running; m != nil && heldIdle(m, x.completed) {
				is.HeldBy = m.Server
			} else if m != nil {
				is.Running = &Execution{Server: m.Server, Kind: m.Kind, Fire: msTime(m.Fire), Begin: msTime(m.Begin)}
			}
			if m := x.completed; m != nil {
				is.Last = &Completion{Server: m.Server, Kind: m.Kind, Fire: msTime(m.Fire), Begin: msTime(m.Begin),
					End: msTime(m.End), DurationMS: m.End - m.Begin, Error: m.Error}
				if m.Since != 0 && m.Since != m.Fire {
					since := msTime(m.Since)
					is.Last.Since = &since
				}
			}
			if m := x.misfire; m != nil {
				t := msTime(m.Since)
				is.MisfireSince = &t
			}
			if e, ok := s.queue[it]; ok {
				is.Failover = &FailoverState{From: e.From, Fire: msTime(e.Fire), ClaimedBy: x.claimedBy}
			}
		} else if e, ok := s.queue[it]; ok {
			is.Failover = &FailoverState{From: e.From, Fire: msTime(e.Fire)}
		}
		st.Items = append(st.Items, is)
	}
	return st, nil
}

// Node is one ZooKeeper node of a [Dump].
type Node struct {
	// Path is relative to the namespace: "/orders-sync/config".
	Path string `json:"path"`
	Data string `json:"data"`
	// EphemeralOwner is the owning session in hex ("0x..."), "" for a
	// persistent node.
	EphemeralOwner string    `json:"ephemeralOwner,omitempty"`
	Version        int32     `json:"version"`
	Created        time.Time `json:"created"`
	Modified       time.Time `json:"modified"`
}

// Dump is the raw node tree of a job, for bug reports.
type Dump struct {
	Namespace string    `json:"namespace"`
	Job       string    `json:"job"`
	Taken     time.Time `json:"taken"`
	Nodes     []Node    `json:"nodes"`
}

// Dump reads every node under job, depth first, children in name order
// (numbers numerically).
func (a *Admin) Dump(ctx context.Context, job string) (Dump, error) {
	if err := a.requireJob(ctx, job); err != nil {
		return Dump{}, err
	}
	d := Dump{Namespace: a.Namespace(), Job: job, Taken: a.now(), Nodes: []Node{}}
	var walk func(p string) error
	walk = func(p string) error {
		data, st, err := a.rc.Get(ctx, p)
		if errors.Is(err, regcenter.ErrNoNode) {
			return nil // gone while we walked
		}
		if err != nil {
			return err
		}
		n := Node{Path: p, Data: string(data), Version: st.Version, Created: st.Ctime, Modified: st.Mtime}
		if st.EphemeralOwner != 0 {
			n.EphemeralOwner = fmt.Sprintf("0x%x", st.EphemeralOwner)
		}
		d.Nodes = append(d.Nodes, n)
		kids, err := a.children(ctx, p)
		if err != nil {
			return err
		}
		slices.SortFunc(kids, compareNames)
		for _, k := range kids {
			if err := walk(p + "/" + k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(layout.Job(job).Root()); err != nil {
		return Dump{}, err
	}
	return d, nil
}

// compareNames orders numbers numerically before other names.
func compareNames(a, b string) int {
	na, ea := strconv.Atoi(a)
	nb, eb := strconv.Atoi(b)
	switch {
	case ea == nil && eb == nil:
		return cmp.Compare(na, nb)
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// oneLine folds a multi-line message into one line.
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "* "))
	}
	return strings.ReplaceAll(strings.Join(lines, "; "), ":; ", ": ")
}

// OneLine folds a multi-line error message (a list of config problems, say)
// into one line, for logs and command-line output.
func OneLine(err error) string { return oneLine(err.Error()) }

// heldIdle reports whether a running mark is held between runs: the run
// it was made for has completed on the same server (its record covers the
// mark's fire and ended after the mark's begin). An instance keeps the
// mark of an item it is assigned across fires, so that a fire writes no
// mark (job's held marks); the mark says which server holds the item, not
// that a run is going.
func heldIdle(m *runningMark, c *completedMark) bool {
	return c != nil && c.Server == m.Server && c.Fire >= m.Fire && c.End >= m.Begin
}
