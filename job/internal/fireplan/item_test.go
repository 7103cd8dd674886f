package fireplan

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	min := every(time.Minute)
	fire := func(s int, o Overlap) Fire {
		return Fire{At: at(s), Overlap: o, Schedule: min, Now: at(s), Lead: 0}
	}
	for _, c := range []struct {
		name string
		f    Fire
		it   Item
		want Decision
	}{
		{"a free item owing nothing runs this fire", fire(120, OverlapWait), Item{},
			Decision{Action: Run, Run: Span{at(120), at(120)}}},
		{"a debt becomes a make-up run through this fire", fire(180, OverlapWait), Item{Owed: true, OwedSince: at(60)},
			Decision{Action: Run, Run: Span{at(60), at(180)}, MakeUp: true, ForgetDebt: true}},
		{"a debt of this very fire is paid by a plain run", fire(180, OverlapWait), Item{Owed: true, OwedSince: at(180)},
			Decision{Action: Run, Run: Span{at(180), at(180)}, ForgetDebt: true}},
		{"a debt of this very fire, later fires due, is made up through them", Fire{At: at(180), Schedule: min, Now: at(300)}, Item{Owed: true, OwedSince: at(180), Dispatched: at(300)},
			Decision{Action: Run, Run: Span{at(180), at(300)}, MakeUp: true, ForgetDebt: true}},
		{"a debt of later fires only, this fire stood for here: left, the debt kept", fire(120, OverlapWait), Item{Owed: true, OwedSince: at(180), Dispatched: at(240)},
			Decision{Action: RunHere}},
		{"a debt of later fires only, this fire ran elsewhere: left, the debt kept", fire(120, OverlapWait), Item{Owed: true, OwedSince: at(180), RanElsewhere: true},
			Decision{Action: RanElsewhere}},
		{"a debt of later fires only: this fire runs, the debt kept", fire(120, OverlapWait), Item{Owed: true, OwedSince: at(180)},
			Decision{Action: Run, Run: Span{at(120), at(120)}}},
		{"an inherited gap earlier than the debt starts the make-up run", fire(240, OverlapWait), Item{Owed: true, OwedSince: at(180), Gap: at(60)},
			Decision{Action: Run, Run: Span{at(60), at(240)}, MakeUp: true, ForgetDebt: true}},
		{"an inherited gap alone is a debt", fire(240, OverlapWait), Item{Gap: at(120)},
			Decision{Action: Run, Run: Span{at(120), at(240)}, MakeUp: true, ForgetDebt: true}},
		{"ran on the previous owner, owing nothing", fire(120, OverlapWait), Item{RanElsewhere: true},
			Decision{Action: RanElsewhere}},
		{"ran on the previous owner, owing earlier fires", fire(120, OverlapWait), Item{RanElsewhere: true, Gap: at(60)},
			Decision{Action: Run, Run: Span{at(60), at(120)}, MakeUp: true, ForgetDebt: true}},
		{"a make-up run here stood for this fire", fire(120, OverlapWait), Item{Dispatched: at(180)},
			Decision{Action: RunHere}},
		{"dispatched at this very fire: it ran here", fire(120, OverlapWait), Item{Dispatched: at(120)},
			Decision{Action: RunHere}},
		{"dispatched earlier: this fire runs", fire(120, OverlapWait), Item{Dispatched: at(60)},
			Decision{Action: Run, Run: Span{at(120), at(120)}}},
		{"busy, allowed to overlap", fire(120, OverlapAllow), Item{Busy: true, Running: Span{at(60), at(60)}},
			Decision{Action: Alongside, Run: Span{at(120), at(120)}}},
		{"busy with a run standing for this fire owes nothing", fire(120, OverlapWait), Item{Busy: true, Running: Span{at(60), at(120)}},
			Decision{Action: Owe}},
		{"busy with an earlier run owes this fire", fire(120, OverlapWait), Item{Busy: true, Running: Span{at(60), at(60)}},
			Decision{Action: Owe, Owes: owes(at(120))}},
		{"busy under replace cancels a run not standing for it", fire(120, OverlapReplace), Item{Busy: true, Running: Span{at(60), at(60)}},
			Decision{Action: Owe, Owes: owes(at(120)), Replace: true}},
		{"busy under replace keeps a run standing for it", fire(120, OverlapReplace), Item{Busy: true, Running: Span{at(60), at(120)}},
			Decision{Action: Owe}},
		{"busy with a gap before its run owes the gap and this fire", fire(180, OverlapWait), Item{Busy: true, Running: Span{at(120), at(120)}, Gap: at(60)},
			Decision{Action: Owe, Owes: owes(at(60), at(180))}},
	} {
		if got := Decide(c.f, c.it); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func owes(ts ...time.Time) Owes {
	var o Owes
	for _, t := range ts {
		o.add(t)
	}
	return o
}

func TestBusyDebts(t *testing.T) {
	min := every(time.Minute)
	for _, c := range []struct {
		name     string
		running  Span
		from, to time.Time
		want     []time.Time
	}{
		{"the run stands for every fire", Span{at(0), at(180)}, at(60), at(120), nil},
		{"the run stands for none: from and to", Span{at(0), at(0)}, at(60), at(180), []time.Time{at(60), at(180)}},
		{"the run ends between: the first fire after it", Span{at(60), at(120)}, at(60), at(240), []time.Time{at(180), at(240)}},
		{"one fire the run does not stand for", Span{at(0), at(0)}, at(60), at(60), []time.Time{at(60)}},
	} {
		o := BusyDebts(c.running, c.from, c.to, min)
		if got := o.All(); !slices.EqualFunc(got, c.want, time.Time.Equal) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// The decisions keep the promises whatever the facts: a run stands for the
// fire it was reserved for, a fire a run here already stood for, or that
// the previous owner ran, is not run again unless earlier fires are owed,
// a busy item is never run twice at once but beside its run by choice, and
// every fire from the earliest owed through this one is run or owed.
func TestDecideProperties(t *testing.T) {
	min := every(time.Minute)
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(lo, hi int) time.Time { // a minute's fire between lo and hi minutes, or zero
		if rng.IntN(4) == 0 {
			return time.Time{}
		}
		return at(60 * (lo + rng.IntN(hi-lo+1)))
	}
	for i := range 20000 {
		fAt := at(60 * (5 + rng.IntN(5)))
		f := Fire{At: fAt, Overlap: Overlap(rng.IntN(3)), Schedule: min, Now: fAt.Add(time.Duration(rng.IntN(180)) * time.Second), Lead: time.Duration(rng.IntN(3)) * time.Second}
		it := Item{Busy: rng.IntN(3) == 0, RanElsewhere: rng.IntN(3) == 0, Dispatched: pick(0, 12), Gap: pick(0, 9)}
		if it.Busy {
			from := at(60 * rng.IntN(10))
			it.Running = Span{from, from.Add(time.Duration(rng.IntN(4)) * time.Minute)}
		}
		if rng.IntN(2) == 0 {
			it.Owed, it.OwedSince = true, at(60*rng.IntN(10))
		}
		d := Decide(f, it)
		fail := func(msg string) { t.Fatalf("case %d: %s\nfire %+v\nitem %+v\ndecision %+v", i, msg, f, it, d) }

		earliest, owed := it.OwedSince, it.Owed // the earliest fire owed, if any
		if !it.Gap.IsZero() && (!owed || it.Gap.Before(earliest)) {
			earliest, owed = it.Gap, true
		}
		if owed && earliest.After(fAt) {
			owed = false // a debt of later fires only is not this fire's: it stays
		}
		switch d.Action {
		case Run:
			if it.Busy {
				fail("a busy item was reserved for a second run")
			}
			if !d.Run.StandsFor(fAt) {
				fail("the run does not stand for the fire reserved")
			}
			if owed && !d.Run.First.Equal(earliest) && earliest.Before(fAt) {
				fail("the make-up run does not start at the earliest fire owed")
			}
			if !owed && (it.RanElsewhere || (!it.Dispatched.IsZero() && !it.Dispatched.Before(fAt))) {
				fail("a fire that already ran is run again")
			}
			if d.MakeUp != (d.Run.First.Before(fAt) || d.Run.Last.After(fAt)) {
				fail("MakeUp disagrees with the run's span")
			}
			if owed && d.Run.Last.Before(MakeUpThrough(min, earliest, f.Now, f.Lead)) {
				fail("a debt is paid by a run that does not stand for every fire due")
			}
			if d.ForgetDebt != owed {
				fail("the debt is dropped without a run paying it, or kept by one that does")
			}
		case Alongside:
			if !it.Busy || f.Overlap != OverlapAllow {
				fail("a run beside another without the allow policy")
			}
		case Owe:
			if !it.Busy || f.Overlap == OverlapAllow {
				fail("owed without a busy item")
			}
			// Every fire from the earliest owed by the gap through this
			// one is the running run's or owed (BusyDebts notes the first
			// of a stretch; the ledger keeps a debt from its first fire).
			from := fAt
			if !it.Gap.IsZero() && it.Gap.Before(fAt) {
				from = it.Gap
			}
			all := d.Owes.All()
			for x := from; !x.After(fAt); x = min.Next(x) {
				if it.Running.StandsFor(x) {
					continue
				}
				if len(all) == 0 || all[0].After(x) {
					fail("a fire the running run does not stand for is owed by nobody")
				}
			}
			for _, x := range all {
				if x.Before(from) || x.After(fAt) {
					fail("owes a fire outside the ones that found the item busy")
				}
			}
			if d.Replace != (f.Overlap == OverlapReplace && !it.Running.StandsFor(fAt)) {
				fail("replaced a run standing for the fire, or kept one under replace")
			}
		case RanElsewhere:
			if owed || !it.RanElsewhere || it.Busy {
				fail("left an item that owes a run, or that did not run elsewhere")
			}
		case RunHere:
			if owed || it.Busy || it.Dispatched.IsZero() || it.Dispatched.Before(fAt) {
				fail("left an item no run here stood for")
			}
		default:
			fail("unknown action")
		}
	}
}
