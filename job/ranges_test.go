package job_test

import (
	"context"
	"errors"
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
// instances: each fire is three calls, one contiguous range per instance,
// covering every record exactly once, and the assignment nodes are a few
// bytes each.
func TestRangeJobServesAMillionRecordsInThreeCallsPerFire(t *testing.T) {
	ns := namespace(t)
	cfg := job.Config{Name: "million", Cron: "* * * * * *", ShardingTotalCount: 1000, ItemsPerShard: 1000, ShardingStrategy: "SCOPE"}
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
	// Wait for three fires after all three run a range each.
	var good []time.Time
	waitUntil(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		byFire := map[time.Time][]rangeCall{}
		for _, c := range calls {
			byFire[c.fire] = append(byFire[c.fire], c)
		}
		good = good[:0]
		for f, cs := range byFire {
			if len(cs) == 3 && cs[0].server != cs[1].server && cs[1].server != cs[2].server && cs[0].server != cs[2].server {
				good = append(good, f)
			}
		}
		return len(good) >= 3
	})
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(good, func(i, j int) bool { return good[i].Before(good[j]) })
	for _, f := range good {
		var cs []rangeCall
		for _, c := range calls {
			if c.fire.Equal(f) {
				cs = append(cs, c)
			}
		}
		sort.Slice(cs, func(i, j int) bool { return cs[i].start < cs[j].start })
		next := int64(0)
		for _, c := range cs {
			if c.start != next || c.end <= c.start || c.end-c.start != int64(c.last-c.first+1)*1000 {
				t.Fatalf("fire %s: ranges %+v do not tile [0, 1000000)", f.Format("15:04:05"), cs)
			}
			next = c.end
		}
		if next != 1_000_000 {
			t.Fatalf("fire %s: ranges end at %d", f.Format("15:04:05"), next)
		}
	}
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
