package job

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// failedRecordReads is a real registry whose next left reads of completed
// records fail with err (a member behind, or one that cannot answer for a
// moment).
type failedRecordReads struct {
	regcenter.Center
	left atomic.Int32 // reads of a completed node still to fail
	err  func(path string) error
}

func (f *failedRecordReads) Get(ctx context.Context, p string) ([]byte, regcenter.Stat, error) {
	if strings.HasSuffix(p, "/"+layout.Completed) && f.left.Add(-1) >= 0 {
		return nil, regcenter.Stat{}, f.err(p)
	}
	return f.Center.Get(ctx, p)
}

// TestCompletionWaitsOutAReadBehindItsWrite: a completion whose create met
// the item's record (the registry has it) and whose reads then say the
// record is not there (a server behind) waits for the reads to catch up
// instead of taking them at their word: it writes the record. Taken at
// their word, every create met the node again, and the completion gave up
// after its attempts, its fire looking unrun (chaos, a ZooKeeper ensemble
// restarted whole: four fires run twice).
func TestCompletionWaitsOutAReadBehindItsWrite(t *testing.T) {
	zc := zktest.Start(t)
	zk := connectOne(t, regcenter.Config{Servers: zc.Servers(), Namespace: "behind"})
	// Reads answered as by a server that has not caught up with the
	// others: the node is not there yet. A ZooKeeper follower serves its
	// reads so, from what it has applied, while a write is decided by the
	// leader — for a moment after an ensemble's restart, for instance.
	rc := &failedRecordReads{Center: zk, err: func(p string) error {
		return fmt.Errorf("%w (get %s, from a server behind)", regcenter.ErrNoNode, p)
	}}
	noop := SimpleFunc(func(context.Context, ShardingContext) error { return nil })
	// Every completion writes its record: the write is what is tested.
	_, r := runOneJob(t, rc, Config{Name: "behind", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}, noop, WithRecordInterval(0))
	if err := r.prepareSync(); err != nil {
		t.Fatal(err)
	}
	first := time.Now().Truncate(time.Second)
	r.fireAssigned(zk.Session(), first, KindFire, nil)
	if m, err := readMark(t, r, zk, 0); err != nil || m.Fire != first.UnixMilli() {
		t.Fatalf("first fire's record: %+v, %v", m, err)
	}
	// This instance takes the record for missing (it creates it), and the
	// next 12 reads of it — one more than the completion's attempts — come
	// from a server behind.
	r.records.Seen(0, false)
	rc.left.Store(int32(4*1 + 8))
	second := first.Add(time.Second)
	r.fireAssigned(zk.Session(), second, KindFire, nil)
	m, err := readMark(t, r, zk, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Fire != second.UnixMilli() {
		t.Fatalf("record of fire %d after the second fire, want %d: the completion was given up", m.Fire, second.UnixMilli())
	}
}
