package reshard

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
)

// freeTurn is a Turn nobody else takes.
type freeTurn struct{}

func (freeTurn) TryAcquire() bool              { return true }
func (freeTurn) Acquire(context.Context) error { return nil }
func (freeTurn) Release()                      {}
func (freeTurn) SetSharded([]string)           {}
func (freeTurn) Changed() <-chan struct{}      { return nil }

// movingPlacer moves the job's reshard epoch before its first n Places,
// as another instance's leave of the job would between Repair's read and
// its transaction.
type movingPlacer struct {
	*placement.Placer
	rc     regcenter.Center
	paths  layout.Job
	n      int
	places int
}

func (m *movingPlacer) Place(ctx context.Context, req *placement.Request) error {
	m.places++
	if m.places <= m.n {
		if _, err := m.rc.Set(ctx, m.paths.ShardingEpoch(), nil, -1); err != nil {
			return err
		}
	}
	return m.Placer.Place(ctx, req)
}

// TestRepairReadsAgainWhenTheJobMoved: the books' repair after a leave
// fails on its fence when another instance moved the job's nodes since it
// read them; it reads them again and commits, up to repairReads reads.
func TestRepairReadsAgainWhenTheJobMoved(t *testing.T) {
	ctx, rc := roomtest.ZooKeeper(t, "repair")
	paths := layout.Job("j")
	for _, p := range []string{paths.ShardingEpoch(), paths.Flag("a", layout.Sharding)} {
		if err := rc.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rc.Set(ctx, paths.Flag("a", layout.Sharding), []byte("0"), -1); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	placer := placement.NewPlacer(ctx, rc, log)
	// The table is made (from the nodes) by the first repair; each case
	// then finds the books wrong: the node says one more item.
	if err := (&Resharder{RC: rc, Paths: paths, Name: "j", Server: "a", Log: log, Turn: freeTurn{}, Placer: placer}).Repair(ctx); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		moves int
		ok    bool
	}{{moves: repairReads - 1, ok: true}, {moves: repairReads, ok: false}} {
		if _, err := rc.Set(ctx, paths.Flag("a", layout.Sharding), []byte(fmt.Sprintf("0-%d", i+1)), -1); err != nil {
			t.Fatal(err)
		}
		mp := &movingPlacer{Placer: placer, rc: rc, paths: paths, n: tc.moves}
		x := &Resharder{RC: rc, Paths: paths, Name: "j", Server: "a", Log: log, Turn: freeTurn{}, Placer: mp}
		err := x.Repair(ctx)
		if (err == nil) != tc.ok || mp.places != min(tc.moves+1, repairReads) {
			t.Fatalf("the job moved before %d of its transactions: Repair %v after %d; want ok=%v after %d",
				tc.moves, err, mp.places, tc.ok, min(tc.moves+1, repairReads))
		}
	}
}
