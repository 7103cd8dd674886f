package job

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// TestAMakeUpRunWhoseRecordCouldNotBeReadKeepsTheRecord: a make-up run whose
// item's record cannot be read runs all the same (at least once), and its
// completion adds to the record: it lists the fires the record listed.
// Written over any version with what the run knew (nothing), the record
// lost them, and the next make-up run ran them again (chaos on etcd, a
// member frozen: ten completed fires run twice).
func TestAMakeUpRunWhoseRecordCouldNotBeReadKeepsTheRecord(t *testing.T) {
	zc := zktest.Start(t)
	zk := connectOne(t, regcenter.Config{Servers: zc.Servers(), Namespace: "unread"})
	rc := &failedRecordReads{Center: zk, err: func(string) error { return errors.New("read refused by the test") }}
	noop := SimpleFunc(func(context.Context, ShardingContext) error { return nil })
	// Every completion writes its record: the write is what is tested.
	_, r := runOneJob(t, rc, Config{Name: "unread", Cron: "0 0 0 1 * *", TimeZone: "UTC", ShardingTotalCount: 1}, noop, WithCompletionJournal(false))
	if err := r.prepareSync(); err != nil {
		t.Fatal(err)
	}
	sched := r.config().book.Schedule
	last := fireplan.Prev(sched, time.Now())
	first := fireplan.Prev(sched, fireplan.Prev(sched, last).Add(-time.Millisecond))
	r.fireAssigned(zk.Session(), first, KindFire, nil)
	if m, err := readMark(t, r, zk, 0); err != nil || m.Fire != first.UnixMilli() {
		t.Fatalf("first fire's record: %+v, %v", m, err)
	}

	// The last fire is owed; this instance knows nothing of the record any
	// more (as after a gain), and cannot read it.
	r.book.NoteMisfire(r.config().book, 0, last)
	r.records.Forget([]int{0})
	rc.left.Store(1)
	r.active().firer.RunOwed(zk.Session())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !r.book.WaitIdle(ctx) {
		t.Fatal("the make-up run did not end")
	}
	m, err := readMark(t, r, zk, 0)
	if err != nil {
		t.Fatal(err)
	}
	cov := m.Cover()
	for _, at := range []time.Time{first, last} {
		if !cov.UncoveredFrom(sched, at).After(at) {
			t.Errorf("the record lists %v, not the fire of %s", cov.Ran(), at.Format(time.DateOnly))
		}
	}
}
