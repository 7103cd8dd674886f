package main

import (
	"github.com/shardjob/shardjob/tools/benchkit"

	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// measureRegister registers regJobs one-item jobs that do not fire during
// the measurement in one in-process scheduler, and measures the wall time
// of Add+Start, the requests per job, the server's watches and the heap
// per idle job, and the requests sent in the regIdle after Start returned.
func (b *bench) measureRegister(ctx context.Context) error {
	jobs := b.cfg.regJobs
	ns := "reg"
	logf, err := os.Create(filepath.Join(b.dir, ns+".log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	logger := slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelInfo}))

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rc, err := b.reg.Open(cctx, ns, logger)
	if err != nil {
		return err
	}
	defer rc.Close()
	// PostgreSQL keeps no watches of its own: the later read says so in
	// the figures instead of a count.
	w0, werr0 := b.watchTotal(ctx)

	heap0 := heapAfterGC()
	g0 := runtime.NumGoroutine()
	s, err := job.NewScheduler(rc, job.WithServerID("reg"), job.WithLogger(logger))
	if err != nil {
		return err
	}
	noop := job.SimpleFunc(func(context.Context, job.ShardingContext) error { return nil })
	rctx, rcancel := context.WithTimeout(ctx, b.cfg.regDeadline)
	defer rcancel()
	st0 := rc.Stats()
	z0, zerr0 := b.reg.CPUTicks()
	c0, cerr0 := selfCPU()
	if b.cfg.regProfile != "" {
		f, err := os.Create(b.cfg.regProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	t0 := time.Now()
	added := 0
	var regErr error
	for i := range jobs {
		// Midnight on 1 January: never during the measurement.
		cfg := job.Config{Name: fmt.Sprintf("r%05d", i), Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}
		if regErr = s.Add(rctx, cfg, noop); regErr != nil {
			break
		}
		added++
	}
	addDur := time.Since(t0)
	if regErr == nil {
		regErr = s.Start(rctx)
	}
	wall := time.Since(t0)
	if b.cfg.regProfile != "" {
		pprof.StopCPUProfile()
	}
	reg := rc.Stats().Sub(st0)
	c1, cerr1 := selfCPU()
	z1, zerr1 := b.reg.CPUTicks()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if b.cfg.stopProfile != "" {
			if f, err := os.Create(b.cfg.stopProfile); err != nil {
				b.log.Warn("shutdown profile", "err", err)
			} else if err := pprof.StartCPUProfile(f); err != nil {
				b.log.Warn("shutdown profile", "err", err)
			} else {
				defer f.Close()
				defer pprof.StopCPUProfile()
			}
		}
		t, sh0 := time.Now(), rc.Stats()
		shc0, shcErr0 := selfCPU()
		shz0, shzErr0 := b.reg.CPUTicks()
		failed := 0
		if err := s.Shutdown(sctx); err != nil {
			failed = len(job.JobsNotStopped(err))
			b.log.Warn("shutdown", "err", err)
		}
		took, sh := time.Since(t), rc.Stats().Sub(sh0)
		k := new(benchkit.KV).Add("jobs", added).Add("took", took.Round(time.Millisecond)).
			Add("req_per_job", float64(sh.Total())/float64(max(added, 1))).Add("reads", float64(sh.Reads)/float64(max(added, 1))).
			Add("writes", float64(sh.Writes)/float64(max(added, 1))).Add("multis", float64(sh.Multis)/float64(max(added, 1))).
			Add("jobs_not_stopped_clean", failed)
		if shc1, err := selfCPU(); err == nil && shcErr0 == nil {
			k.Add("cpu_s", (shc1 - shc0).Seconds())
		}
		if shz1, err := b.reg.CPUTicks(); err == nil && shzErr0 == nil {
			k.Add("server_cpu_s", float64(shz1-shz0)/benchkit.ClockTicks)
		}
		fmt.Println("bench register_shutdown" + k.String())
	}()
	k := new(benchkit.KV).Add("jobs", added).Add("add", addDur.Round(time.Millisecond)).Add("add_start", wall.Round(time.Millisecond)).
		Add("req_per_job", float64(reg.Total())/float64(max(added, 1))).
		Add("reads", float64(reg.Reads)/float64(max(added, 1))).Add("writes", float64(reg.Writes)/float64(max(added, 1))).
		Add("multis", float64(reg.Multis)/float64(max(added, 1))).Add("watches", float64(reg.Watches)/float64(max(added, 1)))
	if cerr0 == nil && cerr1 == nil {
		k.Add("cpu_s", (c1 - c0).Seconds())
	}
	if zerr0 == nil && zerr1 == nil {
		// The registry server's CPU in the same interval: with the process's own, it
		// says which side the registration waits for.
		k.Add("server_cpu_s", float64(z1-z0)/benchkit.ClockTicks)
	}
	if regErr != nil {
		k.Add("error", regErr.Error())
		fmt.Println("bench register" + k.String())
		b.summary.Add("register_s", "failed")
		return nil
	}
	fmt.Println("bench register" + k.String())
	b.summary.Add("register_s", wall.Seconds()).Add("register_req_per_job", float64(reg.Total())/float64(jobs))

	// Idle: what the process sends in the window after Start returned.
	i0 := rc.Stats()
	p0, perr0 := b.packetsReceived(ctx)
	tIdle := time.Now()
	// The rate in 5s slices shows whether the traffic is settling.
	var slices []string
	prev := i0
	for at := tIdle.Add(5 * time.Second); !at.After(tIdle.Add(b.cfg.regIdle)); at = at.Add(5 * time.Second) {
		if err := sleepUntil(ctx, at); err != nil {
			return err
		}
		cur := rc.Stats()
		slices = append(slices, benchkit.FmtFloat(float64(cur.Sub(prev).Total())/5))
		prev = cur
	}
	if err := sleepUntil(ctx, tIdle.Add(b.cfg.regIdle)); err != nil {
		return err
	}
	idle := rc.Stats().Sub(i0)
	p1, perr1 := b.packetsReceived(ctx)
	secs := time.Since(tIdle).Seconds()
	k = new(benchkit.KV).Add("window", time.Since(tIdle).Round(time.Millisecond)).Add("req_per_s", float64(idle.Total())/secs).
		Add("reads_per_s", float64(idle.Reads)/secs).Add("writes_per_s", float64(idle.Writes)/secs).
		Add("multis_per_s", float64(idle.Multis)/secs).Add("watches_per_s", float64(idle.Watches)/secs).
		Add("req_per_s_by_5s", strings.Join(slices, "/"))
	if perr0 == nil && perr1 == nil {
		k.Add("server_packets_per_s", float64(p1-p0)/secs)
	}
	fmt.Println("bench register_idle" + k.String())
	b.summary.Add("idle_req_per_s", float64(idle.Total())/secs)

	// The jobs are idle only once that traffic has stopped: wait, bounded,
	// for a 5s slice without requests (but the session's upkeep) before
	// counting watches and heap.
	settleFrom := time.Now()
	settled := false
	for time.Since(settleFrom) < b.cfg.regSettle {
		before := rc.Stats()
		if err := benchkit.SleepCtx(ctx, 5*time.Second); err != nil {
			return err
		}
		if quiet(rc.Stats().Sub(before)) {
			settled = true
			break
		}
	}
	// The server's own count of what it received, in a window that starts
	// once the instance is quiet and lasts regIdle. The window right after
	// Start can not say it: PostgreSQL reports an idle connection's
	// transactions up to ten seconds late (its statistics are flushed at
	// most once a second, and by an idle backend after ten), so the
	// transactions of the last seconds of Start land in it.
	if settled {
		if err := benchkit.SleepCtx(ctx, 11*time.Second); err != nil {
			return err
		}
		s0 := rc.Stats()
		q0, qerr0 := b.packetsReceived(ctx)
		tq := time.Now()
		if err := benchkit.SleepCtx(ctx, b.cfg.regIdle); err != nil {
			return err
		}
		q1, qerr1 := b.packetsReceived(ctx)
		secs := time.Since(tq).Seconds()
		k := new(benchkit.KV).Add("window", time.Since(tq).Round(time.Millisecond)).
			Add("req_per_s", float64(rc.Stats().Sub(s0).Total())/secs)
		if qerr0 == nil && qerr1 == nil {
			k.Add("server_packets_per_s", float64(q1-q0)/secs)
			b.summary.Add("idle_server_per_s", float64(q1-q0)/secs)
		}
		fmt.Println("bench register_idle_settled" + k.String())
	}
	w1, werr := b.watchTotal(ctx)
	if werr0 != nil {
		werr = werr0
	}
	heap1 := heapAfterGC()
	if b.cfg.heapProfile != "" {
		// Its in-use figures are those of the last GC, the one heapAfterGC
		// ran.
		if err := benchkit.HeapProfile(b.cfg.heapProfile); err != nil {
			b.log.Warn("heap profile", "err", err)
		}
	}
	k = new(benchkit.KV).Add("jobs", jobs).Add("settled", settled).Add("quiet_after_start", time.Since(tIdle).Round(time.Second))
	if werr == nil {
		// wchs counts data watches only; the client's count has both kinds.
		k.Add("watches_per_job", float64(w1-w0)/float64(jobs)).Add("server_watches", w1-w0)
		b.summary.Add("watches_per_job", float64(w1-w0)/float64(jobs))
	} else {
		k.Add("watches", werr.Error())
	}
	k.Add("client_watches_per_job", float64(rc.WatchCount())/float64(jobs))
	heapPerJob := (float64(heap1) - float64(heap0)) / float64(jobs)
	k.Add("heap_kib_per_job", heapPerJob/1024).Add("goroutines", runtime.NumGoroutine()-g0)
	fmt.Println("bench register_idle_cost" + k.String())
	b.summary.Add("heap_kib_per_job", heapPerJob/1024)
	return nil
}

// quiet reports whether d holds no request. The session's own upkeep,
// ZooKeeper's pings and etcd's lease keepalives, is not a request on
// either registry.
func quiet(d regcenter.Stats) bool { return d.Total() == 0 }

// selfCPU returns this process's user and system CPU so far.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// heapAfterGC returns HeapAlloc after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
