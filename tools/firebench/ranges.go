package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/tools/benchkit"
)

// measureRanges runs a SCOPE range job of 1,000 items of 1,000 records (a
// million records) on three in-process instances, each on its own
// session, and counts, per fire, the calls made and the registry requests
// sent by the whole cluster, and the size of the assignment nodes.
func (b *bench) measureRanges(ctx context.Context) error {
	const (
		ns        = "ranges"
		items     = 1000
		perItem   = 1000
		instances = 3
	)
	logf, err := os.Create(filepath.Join(b.dir, ns+".log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	logger := slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := job.Config{Name: "million", Cron: "* * * * * *", ShardingTotalCount: items, ItemsPerShard: perItem, ShardingStrategy: "SCOPE"}

	var mu sync.Mutex
	calls := map[int64]int{}     // by fire, unix ms
	records := map[int64]int64{} // by fire
	var rcs []center
	var scheds []*job.Scheduler
	defer func() {
		for i, s := range scheds {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := s.Shutdown(sctx); err != nil {
				b.log.Warn("shutdown", "err", err)
			}
			cancel()
			rcs[i].Close()
		}
	}()
	for i := range instances {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		rc, err := b.reg.Open(cctx, ns, logger)
		if err != nil {
			cancel()
			return err
		}
		rcs = append(rcs, rc)
		s, err := job.NewScheduler(rc, job.WithServerID(fmt.Sprintf("i%d", i)), job.WithLogger(logger))
		if err != nil {
			cancel()
			return err
		}
		err = s.Add(cctx, cfg, job.RangeFunc(func(_ context.Context, r job.RangeContext) error {
			mu.Lock()
			calls[r.FireTime.UnixMilli()]++
			records[r.FireTime.UnixMilli()] += r.End - r.Start
			mu.Unlock()
			return nil
		}))
		if err == nil {
			err = s.Start(cctx)
		}
		cancel()
		if err != nil {
			return err
		}
		scheds = append(scheds, s)
	}
	total := func() int64 {
		var n int64
		for _, rc := range rcs {
			n += rc.Stats().Total()
		}
		return n
	}
	complete := func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		var out []int64
		for ms, n := range records {
			if n == items*perItem && calls[ms] == instances {
				out = append(out, ms)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	// Warm-up: every instance has joined and the reshard is done once
	// three fires in a row are one call per instance.
	deadline := time.Now().Add(b.cfg.reqDeadline)
	for len(complete()) < 3 {
		if time.Now().After(deadline) {
			return fmt.Errorf("no three complete fires of three calls within %v", b.cfg.reqDeadline)
		}
		if err := benchkit.SleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	// Measure whole seconds, from half a second past one.
	start := time.Now().Truncate(time.Second).Add(1500 * time.Millisecond)
	if err := sleepUntil(ctx, start); err != nil {
		return err
	}
	r0 := total()
	fires := b.cfg.reqFires
	if err := sleepUntil(ctx, start.Add(time.Duration(fires)*time.Second)); err != nil {
		return err
	}
	req := total() - r0
	mu.Lock()
	n, ran, recs := 0, 0, int64(0)
	for ms, c := range calls {
		if ms > start.UnixMilli() && ms <= start.Add(time.Duration(fires)*time.Second).UnixMilli() {
			n++
			ran += c
			recs += records[ms]
		}
	}
	mu.Unlock()
	if n == 0 {
		return fmt.Errorf("no fire in the measured window")
	}
	obs := rcs[0]
	bytes := 0
	for i := range instances {
		data, _, err := obs.Get(ctx, fmt.Sprintf("/million/servers/i%d/sharding", i))
		if err != nil {
			return err
		}
		bytes = max(bytes, len(data))
	}
	k := new(benchkit.KV).Add("records", items*perItem).Add("items", items).Add("instances", instances).Add("fires", n).
		Add("calls_per_fire", float64(ran)/float64(n)).Add("records_per_fire", float64(recs)/float64(n)).
		Add("req_per_fire_cluster", float64(req)/float64(fires)).Add("assignment_bytes_max", bytes)
	fmt.Println("bench ranges" + k.String())
	b.summary.Add("range_calls_per_fire", float64(ran)/float64(n)).Add("range_req_per_fire", float64(req)/float64(fires))
	return nil
}
