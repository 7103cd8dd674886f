package job

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// TestMarksOfAnEndedGenerationGoWithIt: an instance cut off from
// ZooKeeper for longer than its lease and shorter than the server's
// session timeout ends its session's generation and takes the session up
// again under the same id. What the ended generation marked is its to
// remove: the held mark of an item whose run had ended goes as the job
// registers again, and the mark of a run that outlived the generation goes
// once that run completes. Left, each blocks its item on whichever
// instance it moves to next: its fires meet a mark of a session that
// lives on, read it as a run in flight, and owe the item for good (a
// PostgreSQL chaos run lost fifteen fires of an item this way, its mark
// left by a failover run whose completion the fence refused).
func TestMarksOfAnEndedGenerationGoWithIt(t *testing.T) {
	zc := zktest.Start(t)
	proxy, err := zktest.NewProxy(zc.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	rc := connectOne(t, regcenter.Config{Servers: []string{proxy.Addr()}, Namespace: "gens", SessionTimeout: 15 * time.Second})
	// The lease lapses after 10 s of silence; the server expires the session
	// only at 15 s: the reconnect has 5 s to take it up again.
	entered, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	slow := SimpleFunc(func(_ context.Context, sc ShardingContext) error {
		if sc.Item == 1 && runs.Add(1) == 2 {
			close(entered)
			<-release // outlives the generation, whatever its context says
		}
		return nil
	})
	cfg := Config{Name: "gens", Cron: "0 0 0 1 1 *", ShardingTotalCount: 2, Misfire: MisfireSkip} // nothing made up: the run leaves its mark alone
	_, r := runOneJob(t, rc, cfg, slow)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the shutdown, which waits for the run
	if err := r.prepareSync(); err != nil {
		t.Fatal(err)
	}
	ended := rc.Session()
	// A first fire, and a second on the assignment it read, whose item 0
	// keeps its mark and whose item 1 runs on.
	first := time.Now().Truncate(time.Second)
	r.fireAssigned(ended, first, KindFire, nil)
	fired := make(chan struct{})
	go func() {
		defer close(fired)
		r.fireAssigned(ended, first.Add(time.Second), KindFire, nil)
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := func(item int) (*stored.Running, int64) {
		data, st, err := rc.Get(ctx, r.paths.ItemNode(item, layout.Running))
		if errors.Is(err, regcenter.ErrNoNode) {
			return nil, 0
		}
		if err != nil {
			t.Fatal(err)
		}
		m, err := stored.DecodeRunning(data)
		if err != nil {
			t.Fatalf("item %d: mark %q: %v", item, data, err)
		}
		return &m, st.EphemeralOwner
	}
	// Item 0 ran and keeps its mark for the next fire; item 1 runs.
	until(t, 10*time.Second, func() bool { m, _ := owner(0); return m != nil && !r.book.IsRunning(0) })
	for _, it := range []int{0, 1} {
		if m, id := owner(it); m == nil || id != ended.ID() || m.Session != ended.String() {
			t.Fatalf("item %d: mark %+v of session %#x; want one of %s", it, m, id, ended)
		}
	}

	proxy.Block()
	select {
	case <-ended.Done(): // the lease lapsed: the generation ended
	case <-time.After(time.Minute):
		t.Fatal("the session's generation did not end with the registry cut off")
	}
	proxy.Unblock()
	var live *regcenter.Session
	until(t, 20*time.Second, func() bool {
		live = rc.Session()
		return live != ended && r.book.RegisteredUnder(live)
	})
	if live.ID() != ended.ID() {
		t.Fatalf("session %s after %s: the server expired the session; the case needs it taken up again", live, ended)
	}
	// Registered again: the held mark of the ended generation is gone;
	// the running item's stays while its run goes on.
	if m, _ := owner(0); m != nil {
		t.Fatalf("item 0: the ended generation's held mark %+v outlived it", m)
	}
	if m, _ := owner(1); m == nil || m.Session != ended.String() {
		t.Fatalf("item 1: mark %+v while its run of the ended generation goes on", m)
	}
	free()
	<-fired
	until(t, 10*time.Second, func() bool { return !r.book.IsRunning(1) })
	if m, _ := owner(1); m != nil {
		t.Fatalf("item 1: mark %+v outlived its run of the ended generation", m)
	}
}

// until polls cond until it holds, failing t after d.
func until(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not so after %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
