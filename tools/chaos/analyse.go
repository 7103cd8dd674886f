package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/tools/chaos/eventlog"
)

// Execution states.
const (
	stateCommitted  = "committed"  // end line: StillOwner passed, side effect done
	stateAborted    = "aborted"    // abort line: no side effect
	stateReplaced   = "replaced"   // replaced line: a later fire replaced it; its fires count as run
	stateFailed     = "failed"     // failed line: it returned an error, as asked, its last try: its fires count as run
	stateRetried    = "retried"    // failed line, and its process tried its fire again: the later try decides
	stateUnfinished = "unfinished" // begin only: the process died (or the log ends)
)

// execution is one execution of one item, as the log tells it.
type execution struct {
	Run  string
	Inst string
	PID  int
	Item int
	Fire int64 // scheduled fire, Unix ms (the earliest one for misfire/failover)
	// Through is the latest fire it stands for, Unix ms; 0 when the log
	// does not say (then a make-up run is taken to cover every fire up to
	// its begin).
	Through int64
	Kind    string
	Attempt int   // the try of its fire (1, or more for a retry); 0: not logged
	Begin   int64 // Unix ns
	// Stop is the end line's time (committed), the abort line's (aborted),
	// or the process's reaping time, an upper bound on its death
	// (unfinished; the log's last event when the process was never reaped).
	Stop  int64
	State string
	Err   string
	// Done is when its completion's write had returned (Unix ns): the
	// first fire_ended line of its process after Stop that lists its
	// item; 0 when none was logged (or the log predates the lines).
	Done int64
}

func (x *execution) String() string {
	s := fmt.Sprintf("%s pid %d run %s %s fire %s [%s – %s] %s", x.Inst, x.PID, x.Run, x.Kind,
		clock(x.Fire*int64(time.Millisecond)), clock(x.Begin), clock(x.Stop), x.State)
	if x.Err != "" {
		s += " (" + x.Err + ")"
	}
	return s
}

// overlap is a pair of executions of one item whose intervals intersect.
type overlap struct {
	A, B *execution
}

func (o overlap) duration() time.Duration {
	return time.Duration(min(o.A.Stop, o.B.Stop) - max(o.A.Begin, o.B.Begin))
}

// completionInFlight bounds how long after a run's end its completion can
// still be unwritten with records written at once (record interval 0, the
// default): the group commit's linger (job's completionLinger, 2 ms) and
// one registry request, generous for a loaded test machine. A crash later
// than that after the run's end found its record written.
const completionInFlight = 2*time.Millisecond + time.Second

// duplicate is a (fire, item) pair covered by two committed executions,
// and the fault that explains it, if any.
type duplicate struct {
	fireItem
	A, B  *execution
	Cause string
	// Lag is how long before the crash or session loss that explains the
	// duplicate the earlier run ended (negative: after it began). For an
	// unexplained one it is that of a crash or loss that would explain it
	// but for the record interval, longer than the interval allows (0: no
	// such fault).
	Lag time.Duration
}

// fireItem is one item of one scheduled fire.
type fireItem struct {
	Fire int64 // Unix ms
	Item int
}

// failover is a failover execution, the item's previous execution on
// another instance, and when that instance's status node disappeared after
// the previous execution began (0 when it was not seen to).
type failover struct {
	X, Prev *execution
	Gone    int64
}

// sessionLoss is a registry session an instance process logged as lost,
// and the fault that explains it ("" when none does).
type sessionLoss struct {
	Inst    string
	PID     int
	T       int64 // Unix ns, when the process logged the loss
	Session string
	Err     string
	Fault   string
}

func (l sessionLoss) String() string {
	s := fmt.Sprintf("%s pid %d session %s at %s", l.Inst, l.PID, l.Session, clock(l.T))
	if l.Err != "" {
		s += " (" + l.Err + ")"
	}
	return s
}

// window is a closed interval of Unix ns.
type window struct {
	From, To int64
	What     string
}

// AnalyseOptions override the margins recorded in the log's config event.
// Zero values keep the log's.
type AnalyseOptions struct {
	Warmup   time.Duration
	Cooldown time.Duration
}

// Report is the outcome of analysing a log.
type Report struct {
	Config eventlog.RunConfig

	MeasureStart, MeasureStop int64 // Unix ns
	CheckFrom, CheckTo        int64 // fires checked: Unix ms, inclusive

	Faults      int
	FaultCounts map[string]int
	FaultSpans  []window
	NoQuorum    []window

	Executions []*execution
	Committed  int
	Aborted    int
	Replaced   int
	Failed     int
	Unfinished int
	// Retried counts the runs logged as a retry (an attempt above 1). A
	// failed run its process tried again covers nothing (the later try
	// does, or, cut short, leaves the fire owed); a run of a fire after
	// its failed last try elsewhere with a higher attempt (a count handed
	// over) is no duplicate.
	Retried int

	// Overlaps are pairs of committed executions of one item in different
	// processes whose [begin, end] intervals intersect: I1 violations.
	Overlaps []overlap
	// SelfOverlaps are such pairs within one process.
	SelfOverlaps []overlap
	// StaleOverlaps are uncommitted executions (aborted, or cut by the
	// process's death) overlapping a committed execution of the same item
	// in another process, not counting executions whose process was frozen
	// with SIGSTOP during them. Informational: no side effect happened, but
	// the execution outlived its ownership.
	StaleOverlaps []overlap
	// FrozenCommits are committed executions whose process was frozen by
	// SIGSTOP, inside the execution, for longer than the session timeout:
	// StillOwner should have failed after such a freeze. Informational.
	FrozenCommits []*execution

	Fires         int // (fire, item) pairs checked
	NoQuorumFires int // (fire, item) pairs excluded: no quorum at that fire
	NoQuorumLost  int // of those, how many no execution covered anyway
	Lost          []fireItem
	// CompletionsLogged: the instances logged fire_ended lines, so each
	// committed run's Done is known (see execution.Done).
	CompletionsLogged bool
	// Duplicates are (fire, item) pairs of the checked window that more
	// than one committed execution covered. A duplicate is explained when
	// the instance of an earlier covering execution was crashed (kill -9),
	// frozen past its session or partitioned at some moment between that
	// execution's begin and the later one's: its completion may never have
	// been recorded, and at-least-once is the promise then — for a run
	// whose completion was in flight at the crash (record interval 0, the
	// default: it ended within completionInFlight before it), or, with an
	// opted-in interval, one that ended within the interval (plus a run and
	// two periods) before it: a record waits no longer unwritten. When
	// the instances log their completions (CompletionsLogged) and records
	// are written at once, exactly: a fault explains a duplicate when the
	// earlier run's completion had not returned by the fault's start.
	// Unexplained duplicates fail the run.
	Duplicates            []duplicate
	UnexplainedDuplicates []duplicate

	// Backfill is the harness's backfill (-backfill), when it started one:
	// its range, whether it was logged through, its runs (committed or
	// failed, a retried attempt's last), the (fire, item) pairs of the
	// range it did not run (counted only once through: BackfillLost) and
	// those it ran more than once, explained as Duplicates are.
	Backfill            *backfillRange
	BackfillRuns        int
	BackfillLost        []fireItem
	BackfillDuplicates  []duplicate
	BackfillUnexplained []duplicate
	BackfillNotThrough  bool

	// SessionLosses are the registry sessions the instance processes
	// logged as lost (a SessionLost event), in time order. A loss is
	// explained by a fault whose window, stretched by the session timeout,
	// holds it: a fault of the registry's members for any instance, a fault
	// of an instance for that instance only. UnexplainedSessionLosses are
	// the others: a session lost for no fault injected.
	SessionLosses            []sessionLoss
	UnexplainedSessionLosses []sessionLoss

	// OrderViolations are runs of a chain's dependent job that began
	// before their parent job had completed, on every item, a fire they
	// stand for (RunConfig.Chain).
	OrderViolations []orderViolation

	Failovers      int
	FailoverDelays []time.Duration // previous owner's status node gone → failover begin
	FailoverRuns   []failover

	BadLines int
}

// Analyse checks the invariants on a parsed log.
func Analyse(events []eventlog.Event, opt AnalyseOptions) (*Report, error) {
	r := &Report{FaultCounts: map[string]int{}}
	if len(events) == 0 {
		return nil, fmt.Errorf("empty log")
	}
	haveCfg := false
	var first, last int64 = events[0].T, events[0].T
	for _, e := range events {
		first, last = min(first, e.T), max(last, e.T)
		if e.Ev == eventlog.Config && e.Cfg != nil && !haveCfg {
			r.Config, haveCfg = *e.Cfg, true
		}
	}
	if !haveCfg {
		return nil, fmt.Errorf("log has no %s event", eventlog.Config)
	}
	if r.Config.PeriodMS <= 0 {
		r.Config.PeriodMS = 1000
	}
	if opt.Warmup > 0 {
		r.Config.WarmupMS = opt.Warmup.Milliseconds()
	}
	if opt.Cooldown > 0 {
		r.Config.CooldownMS = opt.Cooldown.Milliseconds()
	}

	// Sort by time; the log is in write order, which differs from time order
	// only by the few microseconds between taking the time and writing.
	events = slices.Clone(events)
	sort.SliceStable(events, func(i, j int) bool { return events[i].T < events[j].T })

	type pidKey struct {
		inst string
		pid  int
	}
	byRun := map[string]*execution{}
	exits := map[pidKey]int64{}
	frozen := map[pidKey][]window{}
	stopAt := map[pidKey]int64{}
	openFaults := map[string][]int64{}
	var nqOpen int64 = -1
	var gones []eventlog.Event
	ended := map[pidKey][]eventlog.Event{}
	for _, e := range events {
		switch e.Ev {
		case eventlog.FireEnded:
			k := pidKey{e.Inst, e.PID}
			ended[k] = append(ended[k], e)
			r.CompletionsLogged = true
		case eventlog.MeasureStart:
			if r.MeasureStart == 0 {
				r.MeasureStart = e.T
			}
		case eventlog.MeasureStop:
			r.MeasureStop = e.T
		case eventlog.FaultBegin:
			r.Faults++
			r.FaultCounts[e.Fault]++
			key := e.Fault + "|" + e.Detail
			openFaults[key] = append(openFaults[key], e.T)
		case eventlog.FaultEnd:
			key := e.Fault + "|" + e.Detail
			if starts := openFaults[key]; len(starts) > 0 {
				r.FaultSpans = append(r.FaultSpans, window{From: starts[0], To: e.T, What: e.Fault + " " + e.Detail})
				openFaults[key] = starts[1:]
			}
		case eventlog.NoQuorumBegin:
			if nqOpen < 0 {
				nqOpen = e.T
			}
		case eventlog.NoQuorumEnd:
			if nqOpen >= 0 {
				r.NoQuorum = append(r.NoQuorum, window{From: nqOpen, To: e.T, What: "no quorum"})
				nqOpen = -1
			}
		case eventlog.Signal:
			k := pidKey{e.Inst, e.PID}
			switch e.Detail {
			case "SIGSTOP":
				stopAt[k] = e.T
			case "SIGCONT":
				if t, ok := stopAt[k]; ok {
					frozen[k] = append(frozen[k], window{From: t, To: e.T})
					delete(stopAt, k)
				}
			}
		case eventlog.Exit:
			exits[pidKey{e.Inst, e.PID}] = e.T
		case eventlog.StatusGone:
			gones = append(gones, e)
		case eventlog.Session:
			// The detail is the event's type, then the session.
			typ, sess, _ := strings.Cut(e.Detail, " ")
			if typ == regcenter.SessionLost.String() {
				r.SessionLosses = append(r.SessionLosses, sessionLoss{Inst: e.Inst, PID: e.PID, T: e.T, Session: sess, Err: e.Err})
			}
		case eventlog.Begin:
			if e.Item == nil || e.Run == "" {
				r.BadLines++
				continue
			}
			x := &execution{Run: e.Run, Inst: e.Inst, PID: e.PID, Item: *e.Item, Fire: e.Fire, Through: e.Through, Kind: e.Kind, Attempt: e.Attempt, Begin: e.T, State: stateUnfinished}
			byRun[e.Run] = x
			r.Executions = append(r.Executions, x)
		case eventlog.End, eventlog.Abort, eventlog.Replaced, eventlog.Failed:
			x := byRun[e.Run]
			if x == nil || x.State != stateUnfinished {
				r.BadLines++
				continue
			}
			x.Stop = e.T
			switch e.Ev {
			case eventlog.End:
				x.State = stateCommitted
			case eventlog.Replaced:
				x.State, x.Err = stateReplaced, e.Err
			case eventlog.Failed:
				x.State, x.Err = stateFailed, e.Err
			default:
				x.State, x.Err = stateAborted, e.Err
			}
		}
	}
	// A failed run that its process tried again (a later attempt of its
	// fire there) did not complete its fire: the last attempt does, or,
	// cut short, leaves it to run again.
	lastTry := map[string]int{}
	// A backfill's run of a past fire is not a try of the live one.
	tryKey := func(x *execution) string {
		return fmt.Sprintf("%s|%d|%d|%d|%v", x.Inst, x.PID, x.Item, x.Fire, x.Kind == "backfill")
	}
	for _, x := range r.Executions {
		if x.Attempt > 1 {
			r.Retried++
		}
		lastTry[tryKey(x)] = max(lastTry[tryKey(x)], x.Attempt)
	}
	for _, x := range r.Executions {
		if x.State == stateFailed && lastTry[tryKey(x)] > x.Attempt {
			x.State = stateRetried
		}
	}
	for _, x := range r.Executions {
		if x.State != stateCommitted && x.State != stateFailed {
			continue
		}
		for _, e := range ended[pidKey{x.Inst, x.PID}] {
			if e.T >= x.Stop && slices.Contains(e.Items, x.Item) {
				x.Done = e.T
				break
			}
		}
	}
	for key, starts := range openFaults {
		for _, t := range starts {
			r.FaultSpans = append(r.FaultSpans, window{From: t, To: last, What: strings.ReplaceAll(key, "|", " ") + " (no end)"})
		}
	}
	sort.Slice(r.FaultSpans, func(i, j int) bool { return r.FaultSpans[i].From < r.FaultSpans[j].From })
	if r.MeasureStart == 0 {
		r.MeasureStart = first
	}
	if r.MeasureStop == 0 {
		r.MeasureStop = last
	}
	if nqOpen >= 0 {
		r.NoQuorum = append(r.NoQuorum, window{From: nqOpen, To: last, What: "no quorum (no end)"})
	}
	for k, t := range stopAt { // stopped and never continued
		frozen[k] = append(frozen[k], window{From: t, To: last})
	}

	perItem := map[int][]*execution{}
	for _, x := range r.Executions {
		if x.State == stateUnfinished {
			if t, ok := exits[pidKey{x.Inst, x.PID}]; ok && t >= x.Begin {
				x.Stop = t
			} else {
				x.Stop = last
			}
		}
		switch x.State {
		case stateCommitted:
			r.Committed++
		case stateAborted:
			r.Aborted++
		case stateReplaced:
			r.Replaced++
		case stateFailed, stateRetried:
			r.Failed++
		default:
			r.Unfinished++
		}
		if x.Kind == "failover" {
			r.Failovers++
		}
		perItem[x.Item] = append(perItem[x.Item], x)
	}

	// I1: committed intervals of one item never intersect. A failed run
	// passed StillOwner before it failed (the harness asked it to), as a
	// committed one did before its side effect: it counts as one here.
	for _, item := range slices.Sorted(maps.Keys(perItem)) {
		xs := perItem[item]
		sort.Slice(xs, func(i, j int) bool { return xs[i].Begin < xs[j].Begin })
		var committed []*execution
		for _, x := range xs {
			if x.State == stateCommitted || x.State == stateFailed || x.State == stateRetried {
				committed = append(committed, x)
			}
		}
		for i, a := range committed {
			for _, b := range committed[i+1:] {
				if b.Begin >= a.Stop {
					break
				}
				if a.PID == b.PID && a.Inst == b.Inst {
					r.SelfOverlaps = append(r.SelfOverlaps, overlap{a, b})
				} else {
					r.Overlaps = append(r.Overlaps, overlap{a, b})
				}
			}
		}
		for _, a := range xs {
			if a.State == stateCommitted || a.State == stateFailed || a.State == stateRetried || wasFrozen(frozen[pidKey{a.Inst, a.PID}], a.Begin, a.Stop) {
				continue
			}
			for _, b := range committed {
				if b.Begin >= a.Stop {
					break
				}
				if b.Stop > a.Begin && (b.PID != a.PID || b.Inst != a.Inst) {
					r.StaleOverlaps = append(r.StaleOverlaps, overlap{a, b})
				}
			}
		}
	}

	// A freeze longer than the session timeout inside a committed
	// execution: its session expired, StillOwner should have said so.
	st := r.Config.SessionTimeoutMS * int64(time.Millisecond)
	for _, x := range r.Executions {
		if x.State != stateCommitted {
			continue
		}
		for _, w := range frozen[pidKey{x.Inst, x.PID}] {
			// The SIGCONT is logged after it is sent, so the end line may
			// precede it: what matters is that the freeze began inside the
			// execution and both it and the rest of the execution outlasted
			// the session timeout.
			if w.From >= x.Begin && w.From < x.Stop && w.To-w.From > st && x.Stop-w.From > st {
				r.FrozenCommits = append(r.FrozenCommits, x)
				break
			}
		}
	}

	// I2: every fire of every item in the checked window is covered by a
	// committed execution; and, exactly once: by no more than one, unless a
	// crash explains it.
	period := r.Config.PeriodMS
	covered := map[int]map[int64]bool{}
	coverers := map[fireItem][]*execution{}
	for item := 0; item < r.Config.Items; item++ {
		covered[item] = map[int64]bool{}
	}
	for _, x := range r.Executions {
		// A replaced execution ran its fires (the overlap policy's
		// promise), and so did a failed one: a later run of them is a
		// duplicate, but for a retry of the failed one.
		if (x.State != stateCommitted && x.State != stateReplaced && x.State != stateFailed) || covered[x.Item] == nil {
			continue
		}
		hi, ok := x.coversThrough()
		if !ok {
			continue // a trigger is no fire of the schedule
		}
		for f := x.Fire; f <= hi; f += period {
			covered[x.Item][f] = true
			k := fireItem{Fire: f, Item: x.Item}
			coverers[k] = append(coverers[k], x)
		}
	}
	// Instance faults that can cost a completion, by instance: from the
	// fault's begin to its end (the restart, the SIGCONT, the heal).
	crashes := map[string][]window{}
	open := map[string]int{}
	for _, e := range events {
		if e.Fault != faultKill9 && e.Fault != faultStop && e.Fault != faultPartition {
			continue
		}
		switch e.Ev {
		case eventlog.FaultBegin:
			open[e.Fault+"|"+e.Inst] = len(crashes[e.Inst])
			crashes[e.Inst] = append(crashes[e.Inst], window{From: e.T, To: last, What: e.Fault + " " + e.Inst})
		case eventlog.FaultEnd:
			if i, ok := open[e.Fault+"|"+e.Inst]; ok {
				crashes[e.Inst][i].To = e.T
				delete(open, e.Fault+"|"+e.Inst)
			}
		}
	}
	// A session loss is explained by a fault whose window, stretched by
	// the session timeout (a lease outlives its last word by up to that
	// much), holds it: a fault of the registry's members whatever the
	// instance, a fault of an instance for that instance only.
	type instWindow struct {
		window
		inst string // "" for a fault of the registry's members
	}
	var faultWins []instWindow
	openWin := map[string]int{}
	for _, e := range events {
		key := e.Fault + "|" + e.Detail + "|" + e.Inst
		switch e.Ev {
		case eventlog.FaultBegin:
			openWin[key] = len(faultWins)
			faultWins = append(faultWins, instWindow{window{From: e.T, To: last, What: e.Fault + " " + e.Detail}, e.Inst})
		case eventlog.FaultEnd:
			if i, ok := openWin[key]; ok {
				faultWins[i].To = e.T
				delete(openWin, key)
			}
		}
	}
	for i := range r.SessionLosses {
		l := &r.SessionLosses[i]
		for _, w := range faultWins {
			if (w.inst == "" || w.inst == l.Inst) && w.From <= l.T && l.T <= w.To+st {
				l.Fault = fmt.Sprintf("%s [%s – %s]", w.What, clock(w.From), clock(w.To))
				break
			}
		}
		if l.Fault == "" {
			r.UnexplainedSessionLosses = append(r.UnexplainedSessionLosses, *l)
		}
	}
	// A duplicate is explained when the earlier run's instance was down,
	// frozen or cut off at some moment between that run's begin and the
	// later run's begin: the earlier run's completion may not have reached
	// the registry (a run can commit during a partition while its lease
	// lasts). So it is when the earlier run's process lost its session in
	// that time, whatever the cause (a fault of the registry's members
	// costs every instance its session): a completion not written before
	// the loss is never written, and its fires run again — the
	// at-least-once window of docs/guarantees.md. Unexplained losses are
	// counted apart.
	//
	// What a crash leaves unrecorded depends on the record interval
	// (docs/guarantees.md). With the default, 0, every completion is
	// group-committed at once: the runs a crash leaves unrecorded are
	// those whose completion was itself in flight — that ended no more
	// than completionInFlight before a crash (the group's linger and one
	// request), or, for a session loss, before the loss less the session
	// timeout (a request the registry stopped answering is in flight until
	// the session ends). With records written behind (an opted-in
	// interval), a record may wait up to the interval before it is
	// written: a crash or a loss explains a duplicate when the earlier run
	// ended no more than the interval, plus a run's length and two
	// periods, before it. A duplicate only a crash further off would
	// explain stays unexplained, and says so (beyond). Logs that do not
	// state the interval are checked with no such bound.
	bound, lossBound := int64(-1), int64(-1)
	if ri := r.Config.RecordIntervalMS; ri != nil {
		if *ri == 0 {
			bound = completionInFlight.Nanoseconds()
			lossBound = bound + r.Config.SessionTimeoutMS*int64(time.Millisecond)
		} else {
			bound = (*ri + r.Config.WorkMS + 2*period) * int64(time.Millisecond)
			lossBound = bound
		}
	}
	// With records written at once and the instances logging when their
	// completions returned, a fault explains a duplicate exactly when the
	// earlier run's completion had not returned by the fault's start: one
	// that had is in the registry, and no fault may run its fires again.
	// The bound above is for logs without those lines, and for a run whose
	// fire had not ended (a sibling item still running, the process gone).
	exact := r.CompletionsLogged && r.Config.RecordIntervalMS != nil && *r.Config.RecordIntervalMS == 0
	within := func(a *execution, at, bound int64) bool {
		if exact && a.Done > 0 {
			return a.Done > at
		}
		return bound < 0 || at-a.Stop <= bound
	}
	explain := func(a, b *execution) (cause string, lag time.Duration) {
		for _, w := range crashes[a.Inst] {
			if w.From <= b.Begin && w.To >= a.Begin {
				if lag = time.Duration(w.From - a.Stop); within(a, w.From, bound) {
					return w.What, lag
				}
			}
		}
		for _, l := range r.SessionLosses {
			if l.Inst == a.Inst && l.PID == a.PID && a.Begin <= l.T && l.T <= b.Begin {
				if lag = time.Duration(l.T - a.Stop); within(a, l.T, lossBound) {
					return "session lost " + a.Inst, lag
				}
			}
		}
		return "", lag
	}
	from := r.MeasureStart/int64(time.Millisecond) + r.Config.WarmupMS
	r.CheckFrom = (from + period - 1) / period * period
	r.CheckTo = r.MeasureStop/int64(time.Millisecond) - r.Config.CooldownMS
	for f := r.CheckFrom; f <= r.CheckTo; f += period {
		if inWindows(r.NoQuorum, f*int64(time.Millisecond)) {
			r.NoQuorumFires += r.Config.Items
			for item := 0; item < r.Config.Items; item++ {
				if !covered[item][f] {
					r.NoQuorumLost++
				}
			}
			continue
		}
		for item := 0; item < r.Config.Items; item++ {
			r.Fires++
			if !covered[item][f] {
				r.Lost = append(r.Lost, fireItem{Fire: f, Item: item})
			}
			xs := coverers[fireItem{Fire: f, Item: item}]
			if len(xs) < 2 {
				continue
			}
			sort.Slice(xs, func(i, j int) bool { return xs[i].Begin < xs[j].Begin })
			for i := 1; i < len(xs); i++ {
				if xs[i-1].State == stateFailed && xs[i].Attempt > xs[i-1].Attempt {
					continue // the fire's next try, after a count handed over
				}
				d := duplicate{fireItem: fireItem{Fire: f, Item: item}, A: xs[i-1], B: xs[i]}
				d.Cause, d.Lag = explain(xs[i-1], xs[i])
				r.Duplicates = append(r.Duplicates, d)
				if d.Cause == "" {
					r.UnexplainedDuplicates = append(r.UnexplainedDuplicates, d)
				}
			}
		}
	}

	r.checkBackfill(events, period, explain)

	// Chains: a committed run of job k > 0 began after its parent, job
	// k-1, had completed on every item every checked fire it stands for.
	if j := r.Config.JobItems; r.Config.Chain > 1 && j > 0 {
		for _, x := range r.Executions {
			if x.State != stateCommitted || x.Item < j {
				continue
			}
			hi, ok := x.coversThrough()
			if !ok {
				continue
			}
			k := x.Item / j
		fires:
			for f := max(x.Fire, r.CheckFrom); f <= min(hi, r.CheckTo); f += period {
				for p := (k - 1) * j; p < k*j; p++ {
					done := false
					for _, y := range coverers[fireItem{Fire: f, Item: p}] {
						if y.Stop <= x.Begin {
							done = true
							break
						}
					}
					if !done {
						r.OrderViolations = append(r.OrderViolations, orderViolation{X: x, Parent: p, Fire: f})
						break fires
					}
				}
			}
		}
	}

	// Failover delay: from the departure of the item's previous owner (its
	// status node disappearing after it began its last execution of the
	// item) to the failover execution's begin.
	for _, x := range r.Executions {
		if x.Kind != "failover" {
			continue
		}
		fo := failover{X: x}
		for _, y := range perItem[x.Item] { // sorted by begin
			if y.Begin >= x.Begin {
				break
			}
			if y.Inst != x.Inst {
				fo.Prev = y
			}
		}
		if fo.Prev != nil {
			for _, g := range gones {
				if g.T > x.Begin {
					break
				}
				if g.Inst == fo.Prev.Inst && g.T >= fo.Prev.Begin {
					fo.Gone = g.T
				}
			}
		}
		if fo.Gone != 0 {
			r.FailoverDelays = append(r.FailoverDelays, time.Duration(x.Begin-fo.Gone))
		}
		r.FailoverRuns = append(r.FailoverRuns, fo)
	}
	slices.Sort(r.FailoverDelays)
	return r, nil
}

func wasFrozen(ws []window, from, to int64) bool {
	for _, w := range ws {
		if w.From <= to && w.To >= from {
			return true
		}
	}
	return false
}

func inWindows(ws []window, t int64) bool {
	for _, w := range ws {
		if w.From <= t && t <= w.To {
			return true
		}
	}
	return false
}

// OK reports whether the run upheld the invariants checked: no overlap of
// committed executions and no lost fire.
func (r *Report) OK() bool {
	return len(r.Overlaps) == 0 && len(r.SelfOverlaps) == 0 && len(r.Lost) == 0 && len(r.UnexplainedDuplicates) == 0 &&
		len(r.OrderViolations) == 0 && len(r.BackfillLost) == 0 && len(r.BackfillUnexplained) == 0 && !r.BackfillNotThrough
}

// backfillRange is a backfill the harness started: its fires from From to
// To (Unix ms) and id.
type backfillRange struct {
	From, To int64
	ID       string
	Through  bool
}

// checkBackfill checks the harness's backfill, if it started one: every
// fire of its range ran once on every item of the first job as a backfill
// run (a failed run counts: a backfill runs each fire once, not until it
// succeeds), more than once only where a fault explains it.
func (r *Report) checkBackfill(events []eventlog.Event, period int64, explain func(a, b *execution) (string, time.Duration)) {
	for _, e := range events {
		switch e.Ev {
		case eventlog.BackfillStart:
			r.Backfill = &backfillRange{From: e.Fire, To: e.Through, ID: e.Detail}
		case eventlog.BackfillThrough:
			if r.Backfill != nil && r.Backfill.ID == e.Detail {
				r.Backfill.Through = true
			}
		}
	}
	if r.Backfill == nil {
		return
	}
	items := r.Config.Items
	if r.Config.Chain > 1 && r.Config.JobItems > 0 {
		items = r.Config.JobItems
	}
	runs := map[fireItem][]*execution{}
	for _, x := range r.Executions {
		if x.Kind != "backfill" || (x.State != stateCommitted && x.State != stateFailed) {
			continue
		}
		r.BackfillRuns++
		k := fireItem{Fire: x.Fire, Item: x.Item}
		runs[k] = append(runs[k], x)
	}
	r.BackfillNotThrough = !r.Backfill.Through
	first := (r.Backfill.From + period - 1) / period * period
	for f := first; f <= r.Backfill.To; f += period {
		for item := 0; item < items; item++ {
			xs := runs[fireItem{Fire: f, Item: item}]
			if len(xs) == 0 {
				if r.Backfill.Through {
					r.BackfillLost = append(r.BackfillLost, fireItem{Fire: f, Item: item})
				}
				continue
			}
			sort.Slice(xs, func(i, j int) bool { return xs[i].Begin < xs[j].Begin })
			for i := 1; i < len(xs); i++ {
				d := duplicate{fireItem: fireItem{Fire: f, Item: item}, A: xs[i-1], B: xs[i]}
				d.Cause, d.Lag = explain(xs[i-1], xs[i])
				r.BackfillDuplicates = append(r.BackfillDuplicates, d)
				if d.Cause == "" {
					r.BackfillUnexplained = append(r.BackfillUnexplained, d)
				}
			}
		}
	}
}

// orderViolation is a dependent's run that began before its parent's item
// completed Fire.
type orderViolation struct {
	X      *execution
	Parent int // the parent's item, as logged
	Fire   int64
}

// coversThrough is the latest fire x covers, from x.Fire: a fire covers its
// own, a make-up run through its Through (or, in logs that predate it, its
// begin); a trigger covers none (false).
func (x *execution) coversThrough() (int64, bool) {
	switch x.Kind {
	case "fire":
		return x.Fire, true
	case "misfire", "failover":
		if x.Through > 0 {
			return max(x.Fire, x.Through), true
		}
		return max(x.Fire, x.Begin/int64(time.Millisecond)), true
	}
	return 0, false
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(p*float64(len(ds)-1) + 0.5)
	return ds[min(i, len(ds)-1)]
}

// Registry is the registry the run coordinated through.
func (r *Report) Registry() string {
	if r.Config.Registry == "" {
		return registryZooKeeper
	}
	return r.Config.Registry
}

// Summary is the one-line result.
func (r *Report) Summary() string {
	p50, maxD := "n/a", "n/a"
	if len(r.FailoverDelays) > 0 {
		p50 = fmt.Sprint(percentile(r.FailoverDelays, 0.5).Milliseconds())
		maxD = fmt.Sprint(r.FailoverDelays[len(r.FailoverDelays)-1].Milliseconds())
	}
	dur := time.Duration(r.MeasureStop - r.MeasureStart).Round(time.Second)
	return fmt.Sprintf("chaos: duration=%s instances=%d faults=%d fires=%d executions=%d overlaps=%d lost=%d duplicates=%d unexplained_duplicates=%d failovers=%d failover_p50_ms=%s failover_max_ms=%s"+
		" noquorum_fires=%d committed=%d aborted=%d replaced=%d failed=%d retried=%d unfinished=%d stale_overlaps=%d frozen_commits=%d order_violations=%d session_losses=%d unexplained_session_losses=%d seed=%d registry=%s",
		dur, r.Config.Instances, r.Faults, r.Fires, len(r.Executions), len(r.Overlaps)+len(r.SelfOverlaps), len(r.Lost),
		len(r.Duplicates), len(r.UnexplainedDuplicates),
		r.Failovers, p50, maxD, r.NoQuorumFires, r.Committed, r.Aborted, r.Replaced, r.Failed, r.Retried, r.Unfinished, len(r.StaleOverlaps), len(r.FrozenCommits), len(r.OrderViolations),
		len(r.SessionLosses), len(r.UnexplainedSessionLosses), r.Config.Seed, r.Registry()) + r.backfillSummary()
}

// backfillSummary is the summary's part on the harness's backfill: ""
// when it started none.
func (r *Report) backfillSummary() string {
	if r.Backfill == nil {
		return ""
	}
	return fmt.Sprintf(" backfill_through=%v backfill_runs=%d backfill_lost=%d backfill_duplicates=%d backfill_unexplained=%d",
		r.Backfill.Through, r.BackfillRuns, len(r.BackfillLost), len(r.BackfillDuplicates), len(r.BackfillUnexplained))
}

// maxDetail bounds the detail lines of one kind.
const maxDetail = 50

// Details writes what the summary counts: faults, overlaps, lost fires.
func (r *Report) Details(w io.Writer) {
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(r.FaultCounts)) {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, r.FaultCounts[k]))
	}
	fmt.Fprintf(w, "chaos: faults: %s\n", strings.Join(kinds, " "))
	fmt.Fprintf(w, "chaos: checked fires %s – %s (%d items each)\n",
		clock(r.CheckFrom*int64(time.Millisecond)), clock(r.CheckTo*int64(time.Millisecond)), r.Config.Items)
	for _, nq := range r.NoQuorum {
		fmt.Fprintf(w, "chaos: no quorum %s – %s (%v)\n", clock(nq.From), clock(nq.To), time.Duration(nq.To-nq.From).Round(time.Millisecond))
	}
	for i, o := range r.OrderViolations {
		if i == maxDetail {
			fmt.Fprintf(w, "chaos: ... %d more order violations\n", len(r.OrderViolations)-maxDetail)
			break
		}
		fmt.Fprintf(w, "chaos: ORDER: %s began before item %d of the job before it completed fire %s\n", o.X, o.Parent, clock(o.Fire*int64(time.Millisecond)))
	}
	if r.NoQuorumFires > 0 {
		fmt.Fprintf(w, "chaos: no-quorum fires excluded: %d (item-fires), of which %d not covered by any execution\n", r.NoQuorumFires, r.NoQuorumLost)
	}
	if r.BadLines > 0 {
		fmt.Fprintf(w, "chaos: %d malformed or unmatched log lines ignored\n", r.BadLines)
	}
	for i, fo := range r.FailoverRuns {
		if i == maxDetail {
			fmt.Fprintf(w, "chaos: failover: ... %d more\n", len(r.FailoverRuns)-maxDetail)
			break
		}
		fmt.Fprintf(w, "chaos: failover: item %d: %s\n", fo.X.Item, fo.X)
		switch {
		case fo.Prev == nil:
			fmt.Fprintf(w, "    no earlier execution of the item on another instance\n")
		case fo.Gone == 0:
			fmt.Fprintf(w, "    after %s; its status node was not seen to go\n", fo.Prev)
		default:
			fmt.Fprintf(w, "    after %s; its status node went at %s: delay %dms\n", fo.Prev, clock(fo.Gone), (fo.X.Begin-fo.Gone)/int64(time.Millisecond))
		}
	}
	printOverlaps := func(name string, os []overlap) {
		for i, o := range os {
			if i == maxDetail {
				fmt.Fprintf(w, "chaos: %s: ... %d more\n", name, len(os)-maxDetail)
				break
			}
			fmt.Fprintf(w, "chaos: %s: item %d for %v:\n    %s\n    %s\n", name, o.A.Item, o.duration().Round(time.Millisecond), o.A, o.B)
			if fs := r.faultsDuring(min(o.A.Begin, o.B.Begin), max(o.A.Stop, o.B.Stop)); fs != "" {
				fmt.Fprintf(w, "    during: %s\n", fs)
			}
		}
	}
	for i, x := range r.FrozenCommits {
		if i == maxDetail {
			fmt.Fprintf(w, "chaos: committed after a freeze: ... %d more\n", len(r.FrozenCommits)-maxDetail)
			break
		}
		fmt.Fprintf(w, "chaos: committed after a freeze longer than the session timeout: item %d: %s\n", x.Item, x)
	}
	printOverlaps("OVERLAP", r.Overlaps)
	printOverlaps("OVERLAP (same process)", r.SelfOverlaps)
	printOverlaps("stale execution (uncommitted, outlived its ownership)", r.StaleOverlaps)

	// Session losses: the unexplained ones, then the rest.
	st := r.Config.SessionTimeoutMS * int64(time.Millisecond)
	for i, l := range r.UnexplainedSessionLosses {
		if i == maxDetail {
			fmt.Fprintf(w, "chaos: SESSION LOST with no fault: ... %d more\n", len(r.UnexplainedSessionLosses)-maxDetail)
			break
		}
		fmt.Fprintf(w, "chaos: SESSION LOST with no fault: %s\n", l)
		if fs := r.faultsDuring(l.T-st-5*int64(time.Second), l.T); fs != "" {
			fmt.Fprintf(w, "    near: %s\n", fs)
		}
	}
	printed := 0
	for _, l := range r.SessionLosses {
		if l.Fault == "" {
			continue
		}
		if printed == maxDetail {
			fmt.Fprintf(w, "chaos: session lost: ... more\n")
			break
		}
		printed++
		fmt.Fprintf(w, "chaos: session lost: %s in %s\n", l, l.Fault)
	}

	// Duplicates: the unexplained ones in full, then a count by cause
	// (the fault kind, or session_lost).
	causes := map[string]int{}
	for _, d := range r.Duplicates {
		if f := strings.Fields(d.Cause); len(f) > 0 {
			causes[strings.Join(f[:len(f)-1], "_")]++
		}
	}
	if len(causes) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(causes)) {
			parts = append(parts, fmt.Sprintf("%s=%d", k, causes[k]))
		}
		fmt.Fprintf(w, "chaos: duplicates explained by a fault or a session loss of the earlier run's instance: %s\n", strings.Join(parts, " "))
		var longest time.Duration
		for _, d := range r.Duplicates {
			if d.Cause != "" {
				longest = max(longest, d.Lag)
			}
		}
		fmt.Fprintf(w, "chaos: the earliest of those runs ended %s before the fault or loss that explains it", longest.Round(time.Millisecond))
		if ri := r.Config.RecordIntervalMS; ri != nil {
			fmt.Fprintf(w, " (record interval %s)", time.Duration(*ri)*time.Millisecond)
		}
		fmt.Fprintln(w)
	}
	if b := r.Backfill; b != nil {
		fmt.Fprintf(w, "chaos: backfill %s of fires %s – %s: through %v, %d runs, %d explained duplicates\n", b.ID,
			clock(b.From*int64(time.Millisecond)), clock(b.To*int64(time.Millisecond)), b.Through, r.BackfillRuns,
			len(r.BackfillDuplicates)-len(r.BackfillUnexplained))
		for i, f := range r.BackfillLost {
			if i == maxDetail {
				fmt.Fprintf(w, "chaos: BACKFILL LOST: ... %d more\n", len(r.BackfillLost)-maxDetail)
				break
			}
			fmt.Fprintf(w, "chaos: BACKFILL LOST: item %d fire %s never ran as a backfill run\n", f.Item, clock(f.Fire*int64(time.Millisecond)))
		}
		for i, d := range r.BackfillUnexplained {
			if i == maxDetail {
				fmt.Fprintf(w, "chaos: BACKFILL DUPLICATE: ... %d more\n", len(r.BackfillUnexplained)-maxDetail)
				break
			}
			fmt.Fprintf(w, "chaos: BACKFILL DUPLICATE: item %d fire %s ran twice:\n    %s\n    %s\n", d.Item, clock(d.Fire*int64(time.Millisecond)), d.A, d.B)
		}
	}
	for i, d := range r.UnexplainedDuplicates {
		if i == maxDetail {
			fmt.Fprintf(w, "chaos: DUPLICATE: ... %d more\n", len(r.UnexplainedDuplicates)-maxDetail)
			break
		}
		fmt.Fprintf(w, "chaos: DUPLICATE: item %d fire %s ran twice:\n    %s\n    %s\n", d.Item, clock(d.Fire*int64(time.Millisecond)), d.A, d.B)
		if d.A.Done > 0 {
			fmt.Fprintf(w, "    the earlier run's completion returned at %s\n", clock(d.A.Done))
		}
		if d.Lag > 0 {
			fmt.Fprintf(w, "    the earlier run ended %s before its instance's crash or session loss: longer ago than a completion in flight (or, opted in, the record interval) leaves a run unrecorded\n", d.Lag.Round(time.Millisecond))
		}
		if fs := r.faultsDuring(d.A.Begin-5*int64(time.Second), d.B.Begin); fs != "" {
			fmt.Fprintf(w, "    near: %s\n", fs)
		}
	}

	// Lost fires, one line per run of consecutive fires of one item.
	lost := slices.Clone(r.Lost)
	sort.Slice(lost, func(i, j int) bool {
		if lost[i].Item != lost[j].Item {
			return lost[i].Item < lost[j].Item
		}
		return lost[i].Fire < lost[j].Fire
	})
	printed = 0
	for i := 0; i < len(lost); {
		j := i
		for j+1 < len(lost) && lost[j+1].Item == lost[i].Item && lost[j+1].Fire == lost[j].Fire+r.Config.PeriodMS {
			j++
		}
		if printed == maxDetail {
			fmt.Fprintf(w, "chaos: LOST: ... more\n")
			break
		}
		printed++
		from, to := lost[i].Fire*int64(time.Millisecond), lost[j].Fire*int64(time.Millisecond)
		fmt.Fprintf(w, "chaos: LOST: item %d fires %s – %s (%d)\n", lost[i].Item, clock(from), clock(to), j-i+1)
		if fs := r.faultsDuring(from-5*int64(time.Second), to+int64(time.Second)); fs != "" {
			fmt.Fprintf(w, "    near: %s\n", fs)
		}
		for _, x := range r.Executions {
			if x.Item == lost[i].Item && x.Stop >= from-3*int64(time.Second) && x.Begin <= to+5*int64(time.Second) {
				fmt.Fprintf(w, "    %s\n", x)
			}
		}
		i = j + 1
	}
}

func (r *Report) faultsDuring(from, to int64) string {
	var out []string
	for _, f := range r.FaultSpans {
		if f.From <= to && f.To >= from {
			out = append(out, fmt.Sprintf("%s [%s – %s]", f.What, clock(f.From), clock(f.To)))
		}
	}
	for _, f := range r.NoQuorum {
		if f.From <= to && f.To >= from {
			out = append(out, fmt.Sprintf("no quorum [%s – %s]", clock(f.From), clock(f.To)))
		}
	}
	return strings.Join(out, "; ")
}

func clock(ns int64) string { return time.Unix(0, ns).Format("15:04:05.000") }
