package placement

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
)

// TestCommitOutlastsManyStaleRequests: a batch of repairs of which more
// than Attempts are stale (their job's nodes moved since they were read,
// as when every instance of a namespace leaves at once) fails those, one
// transaction each, and still commits the others: only rounds that end no
// request count against Attempts.
func TestCommitOutlastsManyStaleRequests(t *testing.T) {
	ctx, rc := roomtest.ZooKeeper(t, "commit")
	const stale, fresh = Attempts + 5, 5
	var batch []*Request
	for i := range stale + fresh {
		job := fmt.Sprintf("j%02d", i)
		fence := "/" + job
		if err := rc.EnsurePath(ctx, fence); err != nil {
			t.Fatal(err)
		}
		version := int32(0)
		if i < stale {
			version = 7 // moved since read
		}
		ops := []regcenter.Op{regcenter.CheckOp{Path: fence, Version: version}}
		batch = append(batch, &Request{Job: job, Repair: true, Current: map[string][]int{"a": {0}},
			Ops:  func(map[string][]int, []int) []regcenter.Op { return ops },
			done: make(chan struct{}), ctx: ctx})
	}
	p := NewPlacer(ctx, rc, slog.New(slog.DiscardHandler))
	p.commit(slices.Clone(batch)) // commit reuses its batch's array
	for i, req := range batch {
		<-req.done
		switch {
		case i < stale && !errors.Is(req.err, regcenter.ErrBadVersion):
			t.Fatalf("stale request %s: %v; want it to fail on its fence", req.Job, req.err)
		case i >= stale && req.err != nil:
			t.Fatalf("request %s: %v; want it committed beside %d stale ones", req.Job, req.err, stale)
		}
	}
	table, _, err := p.readTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := table.total(); got != fresh {
		t.Fatalf("the table holds %d units; want the %d fresh requests' one each", got, fresh)
	}
}
