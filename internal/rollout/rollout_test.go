package rollout

import (
	"testing"
	"time"

	"github.com/shardjob/shardjob/jobtype"
)

func TestCheckCountsLostTwiceAndOverlaps(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(1000+s), 0) }
	run := func(item, fire, through int, begin, end int64, server string) Record {
		r := Record{Begin: begin, End: end, Ctx: jobtype.Context{ShardingItem: item, FireTime: at(fire), Kind: "fire", ServerID: server}}
		if through != fire {
			r.Ctx.Through, r.Ctx.Kind = at(through), "misfire"
		}
		return r
	}
	runs := []Record{
		// item 0: seconds 0 and 1, then a make-up run for 2–3
		run(0, 0, 0, 10, 20, "a"), run(0, 1, 1, 30, 40, "a"), run(0, 2, 3, 50, 60, "b"),
		// item 1: second 0 twice (one at once with the other), 1 lost, 2–3 once
		run(1, 0, 0, 10, 20, "a"), run(1, 0, 0, 15, 25, "b"), run(1, 2, 3, 50, 60, "b"),
	}
	rep := Report{From: at(0), To: at(3)}
	check(&rep, runs, 2)
	if rep.Fires != 8 || rep.Lost != 1 || rep.Twice != 1 || rep.Overlaps != 1 || rep.OK() {
		t.Errorf("report %+v: want 8 fires, 1 lost, 1 twice, 1 overlap, not OK", rep)
	}
	if rep.Runs != 6 || rep.Kinds["misfire"] != 2 || rep.Kinds["fire"] != 4 {
		t.Errorf("runs %d, kinds %v", rep.Runs, rep.Kinds)
	}
	clean := Report{From: at(0), To: at(3)}
	check(&clean, runs[:3], 1)
	if !clean.OK() || clean.Fires != 4 {
		t.Errorf("item 0 alone: %+v, want 4 fires, all once", clean)
	}
}

func TestRunRefusesMissingOptions(t *testing.T) {
	if _, err := Run(t.Context(), Options{Dir: t.TempDir()}); err == nil {
		t.Error("Run without Bin and Registry: no error")
	}
}
