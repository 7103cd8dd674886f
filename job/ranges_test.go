package job_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

type rangeCall struct {
	server      string
	fire        time.Time
	first, last int
	start, end  int64
}

// A SCOPE job of a million records (1,000 items of 1,000) on three
// instances: a fire is three calls, one contiguous range per instance,
// covering every record once (under load, one runs only the items free at
// its time, and the others are made up after), no fire runs a record
// twice, and the assignment nodes are a few bytes each.
func TestRangeJobServesAMillionRecordsInThreeCallsPerFire(t *testing.T) {
	ns := namespace(t)
	cfg := job.Config{Name: "million", Cron: "*/3 * * * * *", ShardingTotalCount: 1000, ItemsPerShard: 1000, ShardingStrategy: "SCOPE"}
	var mu sync.Mutex
	var calls []rangeCall
	for _, id := range []string{"a", "b", "c"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rc, s := connect(t, ctx, ns, id)
		err := s.Add(ctx, cfg, job.RangeFunc(func(ctx context.Context, r job.RangeContext) error {
			mu.Lock()
			calls = append(calls, rangeCall{id, r.FireTime, r.First, r.Last, r.Start, r.End})
			mu.Unlock()
			return nil
		}))
		if err == nil {
			err = s.Start(ctx)
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		in := &instance{id: id, rc: rc, sched: s}
		t.Cleanup(func() { in.stop(t) })
	}
	// No fire runs a record twice, whatever the load: the calls of one
	// fire time never overlap. A fire under load may run only the items
	// free at its time (an item whose last run's completion is still
	// being written waits, and is made up after), so the goal is three
	// fires of three calls, one range per instance, that tile the million.
	tiles := func(cs []rangeCall) (bool, error) {
		cs = slices.Clone(cs)
		sort.Slice(cs, func(i, j int) bool { return cs[i].start < cs[j].start })
		next := int64(0)
		for i, c := range cs {
			if c.end <= c.start || c.end-c.start != int64(c.last-c.first+1)*1000 {
				return false, fmt.Errorf("range %+v is not its items' records", c)
			}
			if i > 0 && c.start < cs[i-1].end {
				return false, fmt.Errorf("ranges %+v and %+v overlap", cs[i-1], c)
			}
			if c.start != next {
				next = -1
			} else if next >= 0 {
				next = c.end
			}
		}
		return next == 1_000_000, nil
	}
	var good []time.Time
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, c := range calls[max(0, len(calls)-30):] {
			t.Logf("call: %s fire %s items %d-%d", c.server, c.fire.Format("15:04:05.000"), c.first, c.last)
		}
	})
	waitUntil(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		byFire := map[time.Time][]rangeCall{}
		for _, c := range calls {
			byFire[c.fire] = append(byFire[c.fire], c)
		}
		good = good[:0]
		for f, cs := range byFire {
			whole, err := tiles(cs)
			if err != nil {
				t.Fatalf("fire %s: %v", f.Format("15:04:05.000"), err)
			}
			if whole && len(cs) == 3 && cs[0].server != cs[1].server && cs[1].server != cs[2].server && cs[0].server != cs[2].server {
				good = append(good, f)
			}
		}
		return len(good) >= 3
	})
	obs := observer(t, ns)
	for _, id := range []string{"a", "b", "c"} {
		data, _, err := obs.Get(tctx(t), "/million/servers/"+id+"/sharding")
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 16 {
			t.Errorf("%s's assignment node is %d bytes: %q", id, len(data), data)
		}
		t.Logf("%s: %s", id, data)
	}
}

// A range's call gets the job's per-execution timeout, as an item's does.
func TestRangeJobGetsTheTimeout(t *testing.T) {
	ns := namespace(t)
	cfg := job.Config{Name: "slow", Cron: "* * * * * *", ShardingTotalCount: 4, Timeout: 300 * time.Millisecond}
	timedOut := make(chan bool, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "a")
	err := s.Add(ctx, cfg, job.RangeFunc(func(ctx context.Context, r job.RangeContext) error {
		<-ctx.Done()
		select {
		case timedOut <- errors.Is(context.Cause(ctx), job.ErrExecutionTimeout) && r.Items() == 4:
		default:
		}
		return ctx.Err()
	}))
	if err == nil {
		err = s.Start(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{id: "a", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })
	select {
	case ok := <-timedOut:
		if !ok {
			t.Fatal("the range's context ended, but not by the job's timeout (or not over all 4 items)")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the range was never cut short by the timeout")
	}
}
