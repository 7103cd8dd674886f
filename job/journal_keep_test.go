package job

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// TestAFlushKeepsNamingTheJournalOfTheItemsNewHolder: a journals a fire of
// its item and leaves the record behind; then another process, b, holds
// the item (a was cut off), writes its record naming b's journal and
// journals its next fires. When a flushes its deferred record late, over
// b's, the record must go on naming b's journal: named a's, the fires b
// journals next are found by no reader, and the next make-up run of the
// item ran them again (chaos on etcd: item 3's fires 12:20:03 to :05 ran
// twice, completed by i1 through its journal after i3 had flushed over
// i1's record). a, finding the record names another's journal, writes its
// next completion's record instead of deferring it behind a node whose
// readers do not read a's journal.
func TestAFlushKeepsNamingTheJournalOfTheItemsNewHolder(t *testing.T) {
	zc := zktest.Start(t)
	for _, release := range []bool{false, true} {
		// Both a flush of records that waited their interval and one
		// before a's marks are released.
		t.Run(fmt.Sprintf("release=%v", release), func(t *testing.T) {
			flushKeepsNewHoldersJournal(t, zc, release)
		})
	}
}

func flushKeepsNewHoldersJournal(t *testing.T, zc *zktest.Cluster, release bool) {
	ns := "keepjournal"
	if release {
		ns += "-release"
	}
	rc := connectOne(t, regcenter.Config{Servers: zc.Servers(), Namespace: ns})
	noop := SimpleFunc(func(context.Context, ShardingContext) error { return nil })
	sa, a := runOneJob(t, rc, Config{Name: "keep", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}, noop, WithServerID("a"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.prepareSync(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Truncate(time.Second)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	for i := range 3 {
		a.fireAssigned(rc.Session(), at(i), KindFire, nil)
	}
	m, err := readMark(t, a, rc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Journal != sa.journal.ID() || m.Fire >= at(2).UnixMilli() || !a.records.HasPending() {
		t.Fatalf("a's record names journal %q through %s, pending %v; want a's journal %q, behind a's last fire %s (journalled)",
			m.Journal, time.UnixMilli(m.Fire).Format(time.TimeOnly), a.records.HasPending(), sa.journal.ID(), at(2).Format(time.TimeOnly))
	}

	// b holds the item now: its record (written as b's first completion
	// writes one, a's journal folded in) names b's journal, which lists
	// b's later fire.
	path := a.paths.ItemNode(0, layout.Completed)
	_, st, err := rc.Get(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	const bJournal = "b0journal"
	journal := func(through time.Time) {
		doc := stored.Journal{Server: "b"}
		doc.Put("keep", 0, [][2]int64{{at(0).UnixMilli(), through.UnixMilli()}})
		if _, err := rc.Set(ctx, layout.Journal(bJournal), doc.Encode(), -1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rc.Create(ctx, layout.Journal(bJournal), nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	journal(at(4))
	bm := stored.Completed{Server: "b", Kind: string(KindFire), Fire: at(3).UnixMilli(), Ran: [][2]int64{{at(0).UnixMilli(), at(3).UnixMilli()}}, Journal: bJournal}
	if _, err := rc.Set(ctx, path, bm.Marshal(), st.Version); err != nil {
		t.Fatal(err)
	}

	// a flushes late, over b's record.
	if err := a.active().done.Flush(ctx, nil, release); err != nil {
		t.Fatal(err)
	}
	if m, err = readMark(t, a, rc, 0); err != nil {
		t.Fatal(err)
	}
	if m.Server != "a" || m.Journal != bJournal {
		t.Fatalf("after a's flush the record was written by %q and names journal %q; want a's write naming b's journal %q", m.Server, m.Journal, bJournal)
	}
	// b journals another fire: a's reading of the record finds it.
	journal(at(5))
	rec, err := a.active().reader.Read(ctx, 0, a.config().book.Schedule, a.records)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Through().Equal(at(5)) {
		t.Errorf("a reads the record through %s; b journalled %s", rec.Through().Format(time.TimeOnly), at(5).Format(time.TimeOnly))
	}
	if _, ok := a.records.Provable([]int{0})[0]; ok {
		t.Error("a takes the record it wrote, which names b's journal, for proved by its version")
	}
	// a's next completion of the item writes its record, naming a's journal.
	a.fireAssigned(rc.Session(), at(6), KindFire, nil)
	if m, err = readMark(t, a, rc, 0); err != nil {
		t.Fatal(err)
	}
	if m.Journal != sa.journal.ID() || m.Fire != at(6).UnixMilli() {
		t.Errorf("a's next completion left the record naming %q through %s; want a's record through %s naming a's journal",
			m.Journal, time.UnixMilli(m.Fire).Format(time.TimeOnly), at(6).Format(time.TimeOnly))
	}
}
