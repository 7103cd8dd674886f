package makeup

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// flaky is a registry whose reads and creates of the paths in fail fail,
// and which counts the reads of each path.
type flaky struct {
	regcenter.Center
	mu   sync.Mutex
	fail map[string]bool
	gets map[string]int
}

func (f *flaky) Get(ctx context.Context, p string) ([]byte, regcenter.Stat, error) {
	f.mu.Lock()
	f.gets[p]++
	fail := f.fail[p]
	f.mu.Unlock()
	if fail {
		return nil, regcenter.Stat{}, errors.New("flaky: read refused")
	}
	return f.Center.Get(ctx, p)
}

func (f *flaky) Create(ctx context.Context, p string, data []byte, mode regcenter.Mode) (string, error) {
	f.mu.Lock()
	fail := f.fail[p]
	f.mu.Unlock()
	if fail {
		return "", errors.New("flaky: write refused")
	}
	return f.Center.Create(ctx, p, data, mode)
}

func (f *flaky) reads(p string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets[p]
}

// TestNarrowAndOweOnARealRegistry: a misfire run since 3 s, reserved
// through 10 s (a fire every second), is narrowed by its items' records.
// An item whose record covers every owed fire is settled without running;
// one whose record covers 5 s to 7 s runs 3 s to 4 s and still owes 8 s;
// one whose record cannot be read runs as it was; one with no record runs
// as it was; one whose run starts at 1 s (an absorbed debt) and whose
// record covers 1 s to 10 s is settled since 1 s; a proven record is taken
// as it is, not read again nor noted as read. A misfire node is written
// once for a debt, one that exists is kept, and one whose write fails is
// not noted as written; a job that drops missed fires owes nothing; a wait
// set already is not asked for again.
func TestNarrowAndOweOnARealRegistry(t *testing.T) {
	ctx, real := roomtest.ZooKeeper(t, "makeup")
	rc := &flaky{Center: real, fail: map[string]bool{}, gets: map[string]int{}}
	paths := layout.Job("j")
	sec := func(s int64) time.Time { return time.UnixMilli(s * 1000) }
	write := func(item int, kind string, data []byte) {
		t.Helper()
		roomtest.Put(t, ctx, rc, paths.ItemNode(item, kind), data)
	}
	completed := func(first, last int64) []byte {
		m := stored.Completed{Server: "a", Fire: last * 1000, Ran: [][2]int64{{first * 1000, last * 1000}}}
		return m.Marshal()
	}
	sched := cron.Every(time.Second)
	job := book.Job{Items: 12, Schedule: sched}

	write(0, layout.Completed, completed(3, 10))
	write(1, layout.Completed, completed(5, 7))
	write(2, layout.Completed, completed(3, 10))
	rc.fail[paths.ItemNode(2, layout.Completed)] = true
	write(3, layout.Completed, completed(3, 4)) // stale: the proven record says more
	write(5, layout.Completed, completed(1, 10))

	log := slog.New(slog.DiscardHandler)
	ledger := book.NewLedger()
	b := book.New(ledger, book.Options{Log: log, MisfiresOwed: new(atomic.Int64), Now: func() time.Time { return sec(10) }, OnIdle: func() {}})
	known := records.NewCache()
	d := &Debts{RC: rc, Paths: paths, Book: b, Known: known, Log: log,
		Records: &records.Reader{Center: rc, Paths: paths, Job: "j", Own: "me", Log: log, Report: func(string, regcenter.Stat, []byte, string, ...any) {}}}

	items := []int{0, 1, 2, 3, 4, 5}
	if got := b.Reserve(job, items, sec(3), time.Time{}, book.Misfire, nil); !slices.Equal(got, items) {
		t.Fatalf("reserving %v: %v", items, got)
	}
	proven := map[int]records.Record{3: {Cover: fireplan.Cover{}.With(sched, sec(3), sec(10)), Version: 7, Versioned: true}}
	fires := map[int]time.Time{5: sec(1)}
	n := d.Narrow(ctx, Run{Job: job, At: sec(3), Kind: book.Misfire, Items: items, Fires: fires, Read: sched}, proven)

	if !slices.Equal(n.Todo, []int{1, 2, 4}) {
		t.Fatalf("to run: %v; want [1 2 4]", n.Todo)
	}
	if len(n.Starts) != 1 || !n.Starts[1].Equal(sec(3)) {
		// Item 1 runs from 3 s, as before, but only through 4 s.
		t.Fatalf("starts %v; want item 1 narrowed, from 3 s", n.Starts)
	}
	if len(fires) != 1 || !fires[5].Equal(sec(1)) {
		t.Fatalf("Narrow changed the run's fires: %v", fires)
	}
	if since, owed := ledger.Owed(1); !owed || !since.Equal(sec(8)) {
		t.Fatalf("item 1 owes since %v (%v); want 8 s, the first fire after its record's", since, owed)
	}
	settled := map[int]time.Time{}
	for _, s := range n.Settled {
		if !s.Settled || s.Kind != book.Misfire || !s.Through.Equal(sec(10)) {
			t.Fatalf("settled result %+v; want settled, a misfire, through 10 s", s)
		}
		settled[s.Item] = s.Fire
	}
	if len(settled) != 3 || !settled[0].Equal(sec(3)) || !settled[3].Equal(sec(3)) || !settled[5].Equal(sec(1)) {
		t.Fatalf("settled %v; want 0 and 3 since 3 s, 5 since 1 s", settled)
	}
	if _, ok := n.Priors[2]; ok {
		t.Fatal("item 2's record, which could not be read, is among the priors")
	}
	if p := n.Priors[1]; !p.Through().Equal(sec(7)) {
		t.Fatalf("item 1's prior through %v; want 7 s", p.Through())
	}
	if p, ok := n.Priors[4]; !ok || !p.Cover.IsZero() {
		t.Fatalf("item 4's prior %+v (%v); want an empty record", p, ok)
	}
	if p := n.Priors[3]; p.Version != 7 || !p.Through().Equal(sec(10)) {
		t.Fatalf("item 3's prior %+v; want the proven record", p)
	}
	if got := rc.reads(paths.ItemNode(3, layout.Completed)); got != 0 {
		t.Fatalf("item 3's proven record read %d times; want none", got)
	}
	if _, ok := known.Lookup(3); ok {
		t.Fatal("item 3's proven record noted as read")
	}
	if rec, ok := known.Lookup(1); !ok || !rec.Through().Equal(sec(7)) {
		t.Fatalf("item 1's record as known here: %+v (%v); want through 7 s", rec, ok)
	}

	// A run starting later than its record's first uncovered fire.
	write(7, layout.Completed, completed(3, 5))
	if got := b.Reserve(job, []int{7}, sec(3), time.Time{}, book.Misfire, nil); !slices.Equal(got, []int{7}) {
		t.Fatalf("reserving item 7: %v", got)
	}
	n = d.Narrow(ctx, Run{Job: job, At: sec(3), Kind: book.Misfire, Items: []int{7}, Fires: map[int]time.Time{}, Read: sched}, nil)
	if !slices.Equal(n.Todo, []int{7}) || len(n.Starts) != 1 || !n.Starts[7].Equal(sec(6)) {
		t.Fatalf("item 7 covered 3 s to 5 s: todo %v, starts %v; want [7] from 6 s", n.Todo, n.Starts)
	}

	misfire := func(item int) ([]byte, bool) {
		t.Helper()
		data, _, err := real.Get(ctx, paths.ItemNode(item, layout.Misfire))
		if errors.Is(err, regcenter.ErrNoNode) {
			return nil, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return data, true
	}
	if err := rc.EnsurePath(ctx, paths.Item(8)); err != nil {
		t.Fatal(err)
	}
	if !d.OweRemote(ctx, job, 8, sec(11)) {
		t.Fatal("item 8 owed: no wait asked for")
	}
	if data, ok := misfire(8); !ok || !bytes.Equal(data, stored.Misfire{Since: sec(11).UnixMilli()}.Marshal()) {
		t.Fatalf("item 8's misfire node %q (%v); want since 11 s", data, ok)
	}
	if !ledger.HasNode(8) {
		t.Fatal("item 8's misfire node not noted as written")
	}
	if err := real.Delete(ctx, paths.ItemNode(8, layout.Misfire), -1); err != nil {
		t.Fatal(err)
	}
	if !d.OweRemote(ctx, job, 8, sec(12)) {
		t.Fatal("item 8 owed again: no wait asked for")
	}
	if data, ok := misfire(8); ok {
		t.Fatalf("item 8's misfire node written again for the same debt: %q", data)
	}
	if !b.WaitRemote(8, func() {}) {
		t.Fatal("setting item 8's wait")
	}
	if d.OweRemote(ctx, job, 8, sec(13)) {
		t.Fatal("item 8 waited for already: a wait asked for again")
	}

	kept := stored.Misfire{Since: sec(2).UnixMilli()}.Marshal()
	write(9, layout.Misfire, kept)
	if !d.OweRemote(ctx, job, 9, sec(11)) {
		t.Fatal("item 9 owed: no wait asked for")
	}
	if data, _ := misfire(9); !bytes.Equal(data, kept) {
		t.Fatalf("item 9's existing misfire node now %q; want it kept", data)
	}
	if !ledger.HasNode(9) {
		t.Fatal("item 9's existing misfire node not noted as this instance's")
	}

	// A misfire node that cannot be written is not noted as written.
	rc.fail[paths.ItemNode(10, layout.Misfire)] = true
	if !d.OweRemote(ctx, job, 10, sec(11)) {
		t.Fatal("item 10 owed: no wait asked for")
	}
	if _, ok := misfire(10); ok || ledger.HasNode(10) {
		t.Fatalf("item 10's misfire node, refused, made (%v) or noted (%v)", ok, ledger.HasNode(10))
	}

	skips := job
	skips.SkipsMissed = true
	if err := rc.EnsurePath(ctx, paths.Item(11)); err != nil {
		t.Fatal(err)
	}
	if d.OweRemote(ctx, skips, 11, sec(11)) {
		t.Fatal("a job that drops missed fires asked for a wait")
	}
	if _, ok := misfire(11); ok {
		t.Fatal("a job that drops missed fires wrote a misfire node")
	}
	if _, owed := ledger.Owed(11); owed {
		t.Fatal("a job that drops missed fires owes item 11 a run")
	}
}
