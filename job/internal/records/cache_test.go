package records

import (
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/stored"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func coverThrough(s int) fireplan.Cover {
	return fireplan.CoverOf(fireplan.Span{First: at(0), Last: at(s)})
}

// A deferred record is pending until flushed; one deferred again while it
// was written stays pending, over the version the flush wrote.
func TestDeferredRecordsFlush(t *testing.T) {
	c := NewCache()
	c.Deferred(3, Record{Cover: coverThrough(1), Version: 4, Versioned: true}, stored.Completed{Server: "me"})
	if !c.HasPending() || !c.Exists(3) {
		t.Fatal("a deferred record is not pending, or its node not known to exist")
	}
	if cov, ok := c.PendingCover(3); !ok || !cov.Through().Equal(at(1)) {
		t.Fatalf("pending cover %v %v", cov.Spans(), ok)
	}
	ps := c.PendingOf(nil)
	if len(ps) != 1 || ps[0].Item != 3 || ps[0].Version != 4 || ps[0].Mark.Server != "me" {
		t.Fatalf("pending %+v", ps)
	}
	// Deferred again while the flush was in flight: stays, moved to the
	// version the flush wrote.
	c.Deferred(3, Record{Cover: coverThrough(2), Version: 4, Versioned: true}, stored.Completed{Server: "me"})
	c.Flushed(ps[0], coverThrough(1), 4, 5, at(3), "", false)
	if ps := c.PendingOf(nil); len(ps) != 1 || ps[0].Version != 5 || !ps[0].Cover.Through().Equal(at(2)) {
		t.Fatalf("after a flush of an older deferral: %+v", ps)
	}
	if rec, _ := c.Lookup(3); rec.Version != 5 {
		t.Errorf("record at version %d, want 5", rec.Version)
	}
	c.Flushed(c.PendingOf(nil)[0], coverThrough(2), 5, 6, at(4), "", false)
	if c.HasPending() {
		t.Error("still pending after its flush")
	}
	if rec, _ := c.Lookup(3); rec.Version != 6 || !rec.Versioned || !rec.Through().Equal(at(2)) {
		t.Errorf("record after its flush: %+v", rec)
	}
	if !c.Recent(3, at(5), 2*time.Second) || c.Recent(3, at(6), 2*time.Second) {
		t.Error("Recent does not measure from the flush")
	}
}

// Only records read or written with their version, and read from no other
// process's journal, are provable; all are known.
func TestProvableRecords(t *testing.T) {
	c := NewCache()
	if c.Known([]int{1}) != nil || c.Provable([]int{1}) != nil {
		t.Fatal("an empty cache knows records")
	}
	c.Read(1, Record{Cover: coverThrough(1), Version: 2, Versioned: true})
	c.Read(2, Record{Cover: coverThrough(1)})
	c.Read(3, Record{Cover: coverThrough(1), Version: 2, Versioned: true, Foreign: true})
	items := []int{1, 2, 3, 4}
	if got := c.Known(items); len(got) != 3 {
		t.Errorf("known %v", got)
	}
	if got := c.Provable(items); len(got) != 1 || got[1].Version != 2 {
		t.Errorf("provable %v", got)
	}
	c.Forget([]int{1})
	if _, ok := c.Lookup(1); ok {
		t.Error("a forgotten record is known")
	}
}

// A new mark's first record is written at its run, whenever the last was;
// a held one's waits.
func TestMarkedForgetsWhenWritten(t *testing.T) {
	c := NewCache()
	c.Wrote(1, Record{Versioned: true}, at(0))
	c.Wrote(2, Record{Versioned: true}, at(0))
	c.Marked([]int{1, 2}, map[int]bool{2: true})
	if c.Recent(1, at(1), time.Minute) || !c.Recent(2, at(1), time.Minute) {
		t.Error("Marked changed the wrong item")
	}
	if ps := c.PendingOf(func(int, time.Time) bool { return true }); len(ps) != 0 {
		t.Errorf("pending %v", ps)
	}
}

// A completion carries as many items as fit at the last size per item,
// with a tenth to spare, and at most the most given.
func TestItemsPerTxn(t *testing.T) {
	c := NewCache()
	if got := c.ItemsPerTxn(352_000, 10_000); got != 1000 {
		t.Errorf("first completion: %d items", got)
	}
	c.Sized(100_000, 10)
	if got := c.ItemsPerTxn(352_000, 10_000); got != 32 {
		t.Errorf("after items of 10,000 bytes: %d", got)
	}
	c.Sized(10, 10)
	if got := c.ItemsPerTxn(352_000, 500); got != 500 {
		t.Errorf("small items: %d, want the most", got)
	}
	if c.Awaited() {
		t.Error("awaited before SetAwaited")
	}
	c.SetAwaited()
	if !c.Awaited() {
		t.Error("not awaited after SetAwaited")
	}
}

// everySecond is a schedule firing every second from t0.
type everySecond struct{}

func (everySecond) Next(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }

// A record read lists the fires its item's later fires here find run
// (RanAhead): those it lists, not a hole in it, and none once a fire comes
// after every fire it listed; a steady Cache, which read nothing, answers
// without a lock.
func TestRanAheadListsTheFiresOfARecordRead(t *testing.T) {
	var s everySecond
	c := NewCache()
	if c.ReadAhead() || c.RanAhead(s, at(1)) != nil {
		t.Fatal("a Cache that read nothing finds fires run ahead")
	}
	c.Read(3, Record{Cover: fireplan.CoverOf(fireplan.Span{First: at(0), Last: at(2)}, fireplan.Span{First: at(4), Last: at(5)})})
	c.Read(4, Record{}) // no record: nothing ahead
	for _, x := range []struct {
		fire int
		ran  bool
	}{{1, true}, {3, false}, {5, true}, {6, false}} {
		if got := c.RanAhead(s, at(x.fire))[3]; got != x.ran {
			t.Errorf("fire %d: run ahead %v, want %v", x.fire, got, x.ran)
		}
	}
	if c.ReadAhead() {
		t.Error("a fire after every fire the record listed leaves it kept")
	}
	c.Read(5, Record{Cover: coverThrough(9)})
	c.Forget([]int{5})
	if c.ReadAhead() {
		t.Error("an item forgotten is still read ahead")
	}
}
