package completion

import (
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	claims "github.com/shardjob/shardjob/job/internal/failover"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/regcenter"
)

// testCompleter is a Completer with just what building and correcting a
// completion transaction reads.
func testCompleter() *Completer {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	owed := book.NewLedger()
	return New(Config{
		Paths: layout.Job("c"), Name: "c", Server: "me", Log: log,
		Records: records.NewCache(), Reader: &records.Reader{Paths: layout.Job("c"), Job: "c", Log: log},
		Book: book.New(owed, book.Options{Log: log, MisfiresOwed: new(atomic.Int64), Now: time.Now, OnIdle: func() {}}),
		Owed: owed, Claims: claims.NewState(), Now: time.Now, MaxItems: 10000, Closed: errClosed,
	})
}

// errClosed is the test Completer's cause of a run cut short by shutdown.
var errClosed = errors.New("closed")

// testJob is a job of 8 items, every second, that fails over.
func testJob() Job {
	sched, err := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse("* * * * * *")
	if err != nil {
		panic(err)
	}
	return Job{Book: book.Job{Items: 8, Schedule: sched}, Failover: true}
}

// targetPath is the node an operation standing for t writes.
func targetPath(p layout.Job, t target) string {
	if t.node == queueEntry {
		return p.FailoverItem(t.item)
	}
	return p.ItemNode(t.item, t.node)
}

// TestCompletionOpsKnowTheirItems: every operation of a completion
// transaction is built with the item and node it stands for, so a failed
// one is corrected without reading its path back.
func TestCompletionOpsKnowTheirItems(t *testing.T) {
	s := testCompleter()
	j := testJob()
	at := time.Now().Truncate(time.Second)
	s.Records.Seen(1, true) // a completed node to set, not create
	s.Claims.Claimed(2, 5)  // a failover run's queue entry, at the version claimed
	// A debt the run pays, with its misfire node.
	s.Book.NoteMisfire(j.Book, 4, at)
	s.Owed.SetNode(4, true)
	batch := []Result{
		{Item: 0, Fire: at, Kind: book.Fire},
		{Item: 1, Fire: at, Kind: book.Fire},
		{Item: 2, Fire: at, Kind: book.Failover},
		{Item: 3, Fire: at, Kind: book.Fire, Halted: errClosed},
		{Item: 4, Fire: at, Kind: book.Misfire},
	}
	c := completion{batch: batch, wrote: map[int]int32{}, recorded: make([]fireplan.Cover, len(batch))}
	s.completionOps(j, &c)
	if len(c.ops) != len(c.targets) {
		t.Fatalf("%d ops, %d targets", len(c.ops), len(c.targets))
	}
	seen := map[target]bool{}
	for i, op := range c.ops {
		tg := c.targets[i]
		seen[tg] = true
		var path string
		switch o := op.(type) {
		case regcenter.CreateOp:
			path = o.Path
		case regcenter.SetOp:
			path = o.Path
		case regcenter.DeleteOp:
			path = o.Path
			if tg.node == queueEntry && tg.item == 2 && o.Version != 5 {
				t.Errorf("failover entry deleted at version %d, want the claimed 5", o.Version)
			}
		}
		if want := targetPath(s.Paths, tg); path != want {
			t.Errorf("op %d (%T) writes %s but stands for %+v (%s)", i, op, path, tg, want)
		}
	}
	for _, want := range []target{
		{0, layout.Running}, {0, layout.Completed}, {1, layout.Completed},
		{2, layout.Failover}, {2, queueEntry}, {3, queueEntry}, {4, layout.Misfire},
	} {
		if !seen[want] {
			t.Errorf("no op stands for %+v; targets %v", want, c.targets)
		}
	}
	for i, tg := range c.targets {
		switch op := c.ops[i]; tg {
		case target{0, layout.Completed}:
			if _, ok := op.(regcenter.CreateOp); !ok {
				t.Errorf("item 0's first completed node is written by a %T", op)
			}
		case target{1, layout.Completed}:
			if _, ok := op.(regcenter.SetOp); !ok {
				t.Errorf("item 1's existing completed node is written by a %T", op)
			}
		}
	}
}

// recorded: a completion records its run's fires, from its fire through
// the latest it stood for, added to what the record listed before; without
// a schedule, the run's own span alone.
func TestRecorded(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sec := func(n int) time.Time { return at.Add(time.Duration(n) * time.Second) }
	before := records.Record{Cover: fireplan.CoverOf(fireplan.Span{First: sec(-5), Last: sec(-1)})}
	cases := []struct {
		name        string
		noSchedule  bool
		res         Result
		first, last time.Time
		spans       int
	}{
		{"a fire after the record's last", false, Result{Fire: at, Kind: book.Fire, Prior: before}, sec(-5), at, 1},
		{"a make-up run through later fires", false, Result{Fire: sec(1), Through: sec(3), Kind: book.Misfire, Prior: before}, sec(-5), sec(3), 2},
		{"a fire with a gap before it", false, Result{Fire: sec(2), Kind: book.Fire, Prior: before}, sec(-5), sec(2), 2},
		{"no schedule: the run alone", true, Result{Fire: sec(1), Through: sec(3), Kind: book.Misfire, Prior: before}, sec(1), sec(3), 1},
	}
	s := testCompleter()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob()
			if tc.noSchedule {
				j.Book.Schedule = nil
			}
			c := s.recorded(j, tc.res)
			spans := c.Spans()
			if len(spans) != tc.spans || !spans[0].First.Equal(tc.first) || !c.Through().Equal(tc.last) {
				t.Errorf("recorded %v, want %d spans from %v through %v", spans, tc.spans, tc.first, tc.last)
			}
		})
	}
}
