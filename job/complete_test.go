package job

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/book"
	claims "github.com/shardjob/shardjob/job/internal/failover"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/regcenter"
)

// completionRunner is a runner with just what building and correcting a
// completion transaction reads.
func completionRunner() *runner {
	r := &runner{
		s:       &Scheduler{opts: options{serverID: "me", now: time.Now}},
		name:    "c",
		paths:   layout.Job("c"),
		log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		owed:    book.NewLedger(),
		records: records.NewCache(),
		fo:      claims.NewState(),
	}
	r.book = book.New(r.owed, book.Options{Log: r.log, MisfiresOwed: &r.counters.misfiresOwed, Now: r.s.opts.now, OnIdle: func() {}})
	return r
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
	r := completionRunner()
	cfg := compile(Config{Name: "c", Cron: "* * * * * *", ShardingTotalCount: 8, Failover: true}.WithDefaults())
	at := time.Now().Truncate(time.Second)
	r.records.Seen(1, true) // a completed node to set, not create
	r.fo.Claimed(2, 5)      // a failover run's queue entry, at the version claimed
	// A debt the run pays, with its misfire node.
	r.book.NoteMisfire(cfg.book, 4, at)
	r.owed.SetNode(4, true)
	batch := []itemResult{
		{item: 0, fire: at, kind: KindFire},
		{item: 1, fire: at, kind: KindFire},
		{item: 2, fire: at, kind: KindFailover},
		{item: 3, fire: at, kind: KindFire, halted: ErrSchedulerClosed},
		{item: 4, fire: at, kind: KindMisfire},
	}
	c := completion{batch: batch, wrote: map[int]int32{}, recorded: make([]cover, len(batch))}
	r.completionOps(cfg, &c)
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
		if want := targetPath(r.paths, tg); path != want {
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
