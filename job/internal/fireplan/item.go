package fireplan

import "time"

// Overlap is a job's policy for a fire that finds its item still running
// here (job.Overlap, reduced to what the decision needs).
type Overlap uint8

const (
	// OverlapWait owes the fire a run once the item is free (job's skip
	// and forbid policies: the item is owed; which of them runs it later
	// is the debt's business, not the fire's).
	OverlapWait Overlap = iota
	// OverlapAllow runs the fire beside the run still going.
	OverlapAllow
	// OverlapReplace owes the fire a run and cancels the run still going
	// when it does not stand for the fire.
	OverlapReplace
)

// Span is a stretch of consecutive fires of a schedule, First through
// Last: the fires a run stands for, or that runs covered.
type Span struct {
	First, Last time.Time
}

// StandsFor reports whether the run makes up for the fire at: a fire that
// finds its item so busy owes nothing.
func (s Span) StandsFor(at time.Time) bool {
	return !s.Last.IsZero() && !s.Last.Before(at) && !s.First.After(at)
}

// Fire is the scheduled fire being reserved.
type Fire struct {
	At      time.Time
	Overlap Overlap
	// Schedule is the job's (nil: it did not compile; a make-up run then
	// stands for the fire it starts at alone).
	Schedule Schedule
	// Now and Lead are the reservation's time and the scheduler's fire
	// lead: a make-up run reserved now stands for the fires due by then.
	Now  time.Time
	Lead time.Duration
}

// Item is what this instance knows of one of the fire's items.
type Item struct {
	// Busy: a run holds the item here, standing for Running.
	Busy    bool
	Running Span
	// Owed: the item owes a run here since OwedSince (the ledger's debt).
	Owed      bool
	OwedSince time.Time
	// Gap, when not zero, is the earliest fire the item's previous owner
	// left undone (an inherited gap).
	Gap time.Time
	// RanElsewhere: its previous owner ran this fire.
	RanElsewhere bool
	// Dispatched is the latest scheduled fire a run here stood for or
	// owed (zero: none).
	Dispatched time.Time
}

// Action is what a scheduled fire does with an item.
type Action uint8

const (
	// Run: reserve the item for a run over Decision.Run. When
	// Decision.MakeUp is set, the run is a make-up run since an earlier
	// fire, through this one (and perhaps later ones).
	Run Action = iota
	// Alongside: run this fire beside the item's run still going
	// (OverlapAllow).
	Alongside
	// Owe: the item is busy; note the fires in Decision.Owes as owed, and
	// cancel the run going when Decision.Replace says so.
	Owe
	// RanElsewhere: the previous owner ran this fire and nothing earlier
	// is owed: the fire has run.
	RanElsewhere
	// RunHere: a run here already stood for this fire (a make-up run
	// through it, reserved ahead of it, that ended before this fire came):
	// run again, a completed fire would run twice.
	RunHere
)

// Decision is what a scheduled fire does with one item.
type Decision struct {
	Action Action
	// Run is the span of the run (Run and Alongside).
	Run Span
	// MakeUp: the run starts at an earlier fire than the one being
	// reserved (Run only).
	MakeUp bool
	// ForgetDebt: the run pays the item's debt, which the ledger drops
	// (Run only).
	ForgetDebt bool
	// Owes are the fires the busy item is owed (Owe only): see BusyDebts.
	Owes Owes
	// Replace: cancel the run still going, which does not stand for this
	// fire (Owe under OverlapReplace).
	Replace bool
}

// Decide is what the scheduled fire f does with an item this instance
// knows it.
//
// A busy item runs beside its run under OverlapAllow; otherwise the fires
// its run does not stand for are owed (from an inherited gap, if earlier).
// A free item owes a run since the earlier of its debt and its gap (a
// debt of later fires only is not this fire's); owing nothing, it is left
// when its previous owner ran this fire, or when a run here already stood
// for it. Else it runs: a make-up run since what it owes, through this
// fire and every fire due, or a plain run of this fire.
func Decide(f Fire, it Item) Decision {
	at := f.At
	if it.Busy {
		if f.Overlap == OverlapAllow {
			return Decision{Action: Alongside, Run: Span{at, at}}
		}
		from := at
		if !it.Gap.IsZero() && it.Gap.Before(at) {
			from = it.Gap
		}
		return Decision{
			Action:  Owe,
			Owes:    BusyDebts(it.Running, from, at, f.Schedule),
			Replace: f.Overlap == OverlapReplace && !it.Running.StandsFor(at),
		}
	}
	since, owed := it.OwedSince, it.Owed
	if !it.Gap.IsZero() && (!owed || it.Gap.Before(since)) {
		since, owed = it.Gap, true
	}
	if owed && since.After(at) {
		// A debt of later fires only: a make-up run that stood for this
		// fire too, narrowed by a record listing fires that ran
		// elsewhere, left it (the first fire after them). This fire is
		// decided as owing nothing — run as a plain fire it would run
		// what the record lists, or what the run stood for, again — and
		// the debt stays for its own run.
		owed = false
	}
	if !owed {
		if it.RanElsewhere {
			return Decision{Action: RanElsewhere}
		}
		if !it.Dispatched.IsZero() && !it.Dispatched.Before(at) {
			return Decision{Action: RunHere}
		}
	}
	d := Decision{Action: Run, Run: Span{at, at}, ForgetDebt: owed}
	if owed {
		// A make-up run since the debt, through every fire due: a debt
		// since this very fire may have been left by a make-up run that
		// stood for later fires too (see above), which then find the
		// item run here through them; a plain run would pay the debt
		// with this fire alone, and they would never run.
		through := MakeUpThrough(f.Schedule, since, f.Now, f.Lead)
		if through.Before(at) {
			through = at
		}
		if since.Before(at) || through.After(at) {
			d.Run, d.MakeUp = Span{since, through}, true
		}
	}
	return d
}

// Owes is up to two fires an item is owed: a value, so that a decision
// allocates nothing.
type Owes struct {
	n  int
	at [2]time.Time
}

// All returns the fires owed, earliest first.
func (o *Owes) All() []time.Time { return o.at[:o.n] }

func (o *Owes) add(t time.Time) {
	o.at[o.n] = t
	o.n++
}

// BusyDebts is what an item busy with a run standing for running is owed
// by the fires from through to that found it so: the fires the run does
// not stand for. When the run stands for from but ends before to, the
// debt starts at the first fire after the run's (s's next fire, when s is
// not nil) — not at to, which would leave the fires between owed by
// nobody. Each fire owed is noted once (a debt is kept by its earliest
// fire and its latest).
func BusyDebts(running Span, from, to time.Time, s Schedule) Owes {
	var o Owes
	switch {
	case !running.StandsFor(from):
		o.add(from)
	case to.After(running.Last):
		first := to
		if s != nil {
			if n := s.Next(running.Last); !n.IsZero() && n.Before(to) {
				first = n
			}
		}
		o.add(first)
	}
	if to.After(from) && !running.StandsFor(to) && (o.n == 0 || !o.at[o.n-1].Equal(to)) {
		o.add(to)
	}
	return o
}
