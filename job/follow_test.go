package job

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/journal"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// TestNextFireRunsWhileTheLastRecordIsWritten: an item's fire whose run
// returned and whose completion's record write is slow to commit does not
// hold the item's next fires back: they run on time, as plain fires (not
// a make-up run once the write returns), each following the run before it
// while that run's completion waits, and their completions add to the
// record the first wrote — each fire run once, all recorded, the later
// ones journalled before any flush, so that a crash then runs none of
// them again.
func TestNextFireRunsWhileTheLastRecordIsWritten(t *testing.T) {
	zc := zktest.Start(t)
	zk := connectOne(t, regcenter.Config{Servers: zc.Servers(), Namespace: "follow"})
	rc := NewHeldRecordWrite(zk)
	t.Cleanup(rc.Release) // before the scheduler's shutdown, on any failure
	var mu sync.Mutex
	runs := map[time.Time][]Kind{}
	entered := make(chan time.Time, 4)
	j := SimpleFunc(func(_ context.Context, sc ShardingContext) error {
		mu.Lock()
		runs[sc.FireTime] = append(runs[sc.FireTime], sc.Kind)
		mu.Unlock()
		entered <- sc.FireTime
		return nil
	})
	s, r := runOneJob(t, rc, Config{Name: "follow", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}, j)
	if err := r.prepareSync(); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Truncate(time.Second)
	first, second, third := start.Add(time.Second), start.Add(2*time.Second), start.Add(3*time.Second)
	deadline := time.After(30 * time.Second)

	// A fire before them, as a new job's before its reshard: its
	// completion releases its mark (writing the record).
	r.fireAssigned(zk.Session(), start, KindFire, nil)
	<-entered

	// The first fire under the item's new mark, which it keeps, writes its
	// record: held.
	rc.Armed.Store(true)
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		r.fireAssigned(zk.Session(), first, KindFire, nil)
	}()
	select {
	case <-rc.Held():
	case <-deadline:
		t.Fatal("the first fire's record write never came")
	}
	<-entered // the first fire's run

	// The next fire starts its run while that write is held.
	secondDone := make(chan struct{})
	go func() {
		defer close(secondDone)
		r.fireAssigned(zk.Session(), second, KindFire, nil)
	}()
	select {
	case got := <-entered:
		if !got.Equal(second) {
			t.Fatalf("a run of fire %s entered; want the second fire %s", got.Format(time.TimeOnly), second.Format(time.TimeOnly))
		}
	case <-secondDone:
		t.Fatal("the second fire ended without running its item while the first record was being written")
	case <-deadline:
		t.Fatal("the second fire did not run while the first record was being written")
	}
	// The second run returned, and its completion waits for the first:
	// the third fire follows it in turn.
	for !r.book.Returned(0) {
		select {
		case <-deadline:
			t.Fatal("the second run's completion never waited for the first")
		case <-time.After(5 * time.Millisecond):
		}
	}
	thirdDone := make(chan struct{})
	go func() {
		defer close(thirdDone)
		r.fireAssigned(zk.Session(), third, KindFire, nil)
	}()
	select {
	case got := <-entered:
		if !got.Equal(third) {
			t.Fatalf("a run of fire %s entered; want the third fire %s", got.Format(time.TimeOnly), third.Format(time.TimeOnly))
		}
	case <-thirdDone:
		t.Fatal("the third fire ended without running its item while the first record was being written")
	case <-deadline:
		t.Fatal("the third fire did not run while the first record was being written")
	}
	rc.Release()
	for _, done := range []chan struct{}{firstDone, secondDone, thirdDone} {
		select {
		case <-done:
		case <-deadline:
			t.Fatal("a fire did not end once the write was released")
		}
	}

	mu.Lock()
	for _, at := range []time.Time{first, second, third} {
		if k := runs[at]; len(k) != 1 || k[0] != KindFire {
			t.Errorf("fire %s ran as %v; want one plain run", at.Format(time.TimeOnly), k)
		}
	}
	if len(runs) != 4 {
		t.Errorf("runs %v; want the four fires only", runs)
	}
	mu.Unlock()

	// As a crash now would leave it: the node lists the first fire, the
	// journal it names the second.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := readMark(t, r, zk, 0)
	if err != nil {
		t.Fatal(err)
	}
	ran, err := journal.Read(ctx, zk, m.Journal, "follow", 0)
	if err != nil || m.Journal != s.journal.ID() {
		t.Fatalf("record names journal %q (this process's: %q), read: %v", m.Journal, s.journal.ID(), err)
	}
	sched := r.config().book.Schedule
	cov := m.Cover().Union(sched, stored.RanCover(ran))
	for _, at := range []time.Time{first, second, third} {
		if !cov.UncoveredFrom(sched, at).After(at) {
			t.Errorf("record and journal %v do not list fire %s", cov.Ran(), at.Format(time.TimeOnly))
		}
	}
	// Flushed, the node lists both.
	r.active().done.FlushAll(ctx)
	if m, err = readMark(t, r, zk, 0); err != nil {
		t.Fatal(err)
	}
	if m.Fire != third.UnixMilli() || len(m.Ran) != 1 || m.Ran[0] != [2]int64{start.UnixMilli(), third.UnixMilli()} {
		t.Errorf("flushed record: through %d, ran %v; want %d..%d", m.Fire, m.Ran, start.UnixMilli(), third.UnixMilli())
	}
}
