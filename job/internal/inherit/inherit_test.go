package inherit

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// TestReadAndRecheckOnARealRegistry: of four items gained at the fire of
// 10 s (a fire every second), one completed through 9 s has no gap, one
// completed through 5 s has a gap from 6 s, one with no record but a
// misfire node from 3 s has a gap from 3 s (its debt now this instance's)
// and its retry node's failed attempts are inherited, and one whose record
// does not decode is reported and, read as never run, owes nothing; a job
// that skips missed fires finds no gaps but reads the records. Recheck
// drops an item whose record now lists the fire.
func TestReadAndRecheckOnARealRegistry(t *testing.T) {
	ctx, rc := roomtest.ZooKeeper(t, "inherit")
	paths := layout.Job("j")
	sec := func(s int64) time.Time { return time.UnixMilli(s * 1000) }
	write := func(item int, kind string, data []byte) {
		t.Helper()
		roomtest.Put(t, ctx, rc, paths.ItemNode(item, kind), data)
	}
	completed := func(through int64) []byte {
		m := stored.Completed{Server: "a", Fire: through * 1000, Ran: [][2]int64{{through * 1000, through * 1000}}}
		return m.Marshal()
	}
	write(0, layout.Completed, completed(9))
	write(1, layout.Completed, completed(5))
	write(2, layout.Misfire, stored.Misfire{Since: sec(3).UnixMilli()}.Marshal())
	write(2, layout.Retry, stored.Retry{Fire: sec(3).UnixMilli(), Failed: 2}.Marshal())
	write(3, layout.Completed, []byte("{garbage"))

	var reported []string
	log := slog.New(slog.DiscardHandler)
	report := func(p string, _ regcenter.Stat, _ []byte, _ string, _ ...any) { reported = append(reported, p) }
	known := records.NewCache()
	owed := book.NewLedger()
	var inherited assume.Inherited
	rd := &Reader{RC: rc, Paths: paths, Known: known, Owed: owed, Gaps: &inherited, Log: log, Report: report,
		Records: &records.Reader{Center: rc, Paths: paths, Job: "j", Own: "me", Log: log, Report: report}}
	sched := cron.Every(time.Second)
	at := sec(10)
	fresh := []int{0, 1, 2, 3}

	skipped := rd.Read(ctx, Job{Schedule: sched, SkipsMissed: true, Retries: true}, at, fresh)
	if len(skipped) != 0 || owed.HasNode(2) {
		t.Fatalf("a job skipping missed fires: gaps %v, misfire node taken %v; want none, not taken", skipped, owed.HasNode(2))
	}
	if rec, ok := known.Lookup(0); !ok || !rec.Through().Equal(sec(9)) {
		t.Fatalf("a job skipping missed fires did not read item 0's record: %+v %v", rec, ok)
	}

	gaps := rd.Read(ctx, Job{Schedule: sched, Retries: true}, at, fresh)
	want := map[int]time.Time{1: sec(6), 2: sec(3)}
	if len(gaps) != len(want) {
		t.Fatalf("gaps %v; want %v", gaps, want)
	}
	for it, since := range want {
		if !gaps[it].Equal(since) {
			t.Fatalf("item %d's gap from %v; want %v (gaps %v)", it, gaps[it], since, gaps)
		}
	}
	if !owed.HasNode(2) {
		t.Fatal("item 2's misfire node is not this instance's after the read")
	}
	if !slices.Contains(reported, paths.ItemNode(3, layout.Completed)) {
		t.Fatalf("item 3's garbage record not reported: %v", reported)
	}
	if f := inherited.FailedOf([]int{2}); f[2].N != 2 || !f[2].Fire.Equal(sec(3)) {
		t.Fatalf("item 2's failed attempts: %+v; want 2 from its retry node", f)
	}
	if through := inherited.Take([]int{0, 1, 2, 3}); len(through) != 2 || !through[1].Equal(sec(9)) || !through[2].Equal(sec(9)) {
		t.Fatalf("gaps' fires the previous owner may have run: %v; want through 9 s for each", through)
	}

	// The fire at 10 s ran on the previous owner of items 0 and 1 between
	// the read and the mark: 0's record now lists it.
	write(0, layout.Completed, completed(10))
	keep, ran := rd.Recheck(ctx, sched, at, []int{0, 1, 3}, []int{0, 1})
	if !slices.Equal(keep, []int{1, 3}) || !slices.Equal(ran, []int{0}) {
		t.Fatalf("Recheck: keep %v, ran there %v; want [1 3], [0]", keep, ran)
	}
	if keep, ran := rd.Recheck(ctx, sched, at, []int{1, 3}, nil); !slices.Equal(keep, []int{1, 3}) || ran != nil {
		t.Fatalf("Recheck with nothing unrecorded: %v, %v; want the items unchanged", keep, ran)
	}
}

// TestAnItemNeverRunOwesTheFireItsReshardCameAt: an item gained with
// neither record nor debt owes, in a young job (a reshard within NewJob of
// the tree's making), every fire since the job's first — not before this
// instance began firing its schedule (a job enabled later): the fires of its
// first seconds may have passed with the item in no assignment, unplaced,
// or on an owner behind in its fire order that found it gone. In an older
// job (an item a larger count added) it owes the fires from the one the
// reshard came at or after (here 8 s: written at 8.3 s), no more than two
// fires back (the registry's clock is not this instance's), never one
// from before the job began nor one the fire being made stands for. An
// item with a record keeps the gap the record tells. The make-up run is
// narrowed by the record once marked, so a fire the previous owner did run
// is not run again.
func TestAnItemNeverRunOwesTheFireItsReshardCameAt(t *testing.T) {
	ctx, rc := roomtest.ZooKeeper(t, "inherit-new")
	paths := layout.Job("n")
	ms := func(v int64) time.Time { return time.UnixMilli(v) }
	sched := cron.Every(time.Second)
	for _, c := range []struct {
		name string
		at   time.Time
		g    Gain
		want time.Time
	}{
		{"young: the job's first fire", ms(10000), Gain{Written: ms(8300), Began: ms(2500), Young: true}, ms(3000)},
		{"young, begun on a fire: the next", ms(10000), Gain{Written: ms(8300), Began: ms(3000), Young: true}, ms(4000)},
		{"young, no fire before this one", ms(10000), Gain{Written: ms(9300), Began: ms(9100), Young: true}, time.Time{}},
		{"young, begun unknown: the reshard's fire", ms(10000), Gain{Written: ms(8300), Young: true}, ms(8000)},
		{"young, scheduled here after it began (enabled, or started later)", ms(10000), Gain{Written: ms(8300), Began: ms(2500), Scheduled: ms(5200), Young: true}, ms(6000)},
		{"young, scheduled here before it began", ms(10000), Gain{Written: ms(8300), Began: ms(2500), Scheduled: ms(1200), Young: true}, ms(3000)},
		{"young, scheduled since this fire's", ms(10000), Gain{Written: ms(8300), Began: ms(2500), Scheduled: ms(9500), Young: true}, time.Time{}},
		{"the reshard's fire", ms(10000), Gain{Written: ms(8300), Began: ms(2500)}, ms(8000)},
		{"in the next fire's lead: the fire before it", ms(10000), Gain{Written: ms(8980), Began: ms(2500)}, ms(8000)},
		{"not before the job began", ms(10000), Gain{Written: ms(8300), Began: ms(8100)}, ms(9000)},
		{"three fires back: another clock's", ms(10000), Gain{Written: ms(7300), Began: ms(2500)}, time.Time{}},
		{"the fire itself", ms(9000), Gain{Written: ms(9300), Began: ms(2500)}, time.Time{}},
		{"unknown", ms(10000), Gain{Began: ms(2500), Young: true}, time.Time{}},
	} {
		if got := GainedSince(sched, c.at, c.g); !got.Equal(c.want) {
			t.Errorf("GainedSince %s: %v; want %v", c.name, got, c.want)
		}
	}

	log := slog.New(slog.DiscardHandler)
	report := func(string, regcenter.Stat, []byte, string, ...any) {}
	completed := stored.Completed{Server: "a", Fire: 5000, Ran: [][2]int64{{5000, 5000}}}
	roomtest.Put(t, ctx, rc, paths.ItemNode(1, layout.Completed), completed.Marshal())
	read := func(at, since time.Time) map[int]time.Time {
		var inherited assume.Inherited
		rd := &Reader{RC: rc, Paths: paths, Known: records.NewCache(), Owed: book.NewLedger(), Gaps: &inherited, Log: log, Report: report,
			Records: &records.Reader{Center: rc, Paths: paths, Job: "n", Own: "me", Log: log, Report: report}}
		return rd.Read(ctx, Job{Schedule: sched, Since: since}, at, []int{0, 1})
	}
	gaps := read(ms(10000), ms(3000))
	if len(gaps) != 2 || !gaps[0].Equal(ms(3000)) || !gaps[1].Equal(ms(6000)) {
		t.Fatalf("gaps at 10 s with the job's first fire 3 s: %v; want item 0 from 3 s (no record), item 1 from 6 s (its record)", gaps)
	}
	if gaps := read(ms(10000), ms(8000)); len(gaps) != 2 || !gaps[0].Equal(ms(8000)) {
		t.Fatalf("gaps at 10 s with the reshard's fire 8 s: %v; want item 0 from 8 s", gaps)
	}
	if gaps := read(ms(10000), ms(10000)); len(gaps) != 1 || !gaps[1].Equal(ms(6000)) {
		t.Fatalf("gaps at 10 s owing from 10 s: %v; want item 1's alone: the fire itself runs item 0", gaps)
	}
	if gaps := read(ms(10000), time.Time{}); len(gaps) != 1 {
		t.Fatalf("gaps with nothing owed since a reshard: %v; want item 1's alone, as before", gaps)
	}
}
