package main

import (
	"github.com/shardjob/shardjob/tools/benchkit"

	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// fireTrack records, per fire of the in-process job, how many items ran,
// when the last one returned, and the requests sent before the first one
// was entered.
type fireTrack struct {
	rc center

	mu    sync.Mutex
	fires map[int64]*fireRec        // by fire time, unix ms
	pre   map[int64]regcenter.Stats // by the fire time it precedes
	// stood counts, by fire time, the items a make-up run stood for
	// without running that fire itself (ShardingContext.Through).
	stood map[int64]int
}

type fireRec struct {
	items   int
	lastEnd time.Time
	atEnter regcenter.Stats // Stats when the fire's first Execute was entered
}

func (t *fireTrack) execute(_ context.Context, sc job.ShardingContext) error {
	ms := sc.FireTime.UnixMilli()
	t.mu.Lock()
	f := t.fires[ms]
	if f == nil {
		f = &fireRec{atEnter: t.rc.Stats()}
		t.fires[ms] = f
	}
	f.items++
	f.lastEnd = time.Now()
	for at := sc.FireTime.Add(time.Second); !at.After(sc.Through); at = at.Add(time.Second) {
		t.stood[at.UnixMilli()]++
	}
	t.mu.Unlock()
	return nil
}

// complete returns the fire times, sorted, whose items all ran.
func (t *fireTrack) complete(items int) []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var r []int64
	for ms, f := range t.fires {
		if f.items >= items {
			r = append(r, ms)
		}
	}
	slices.Sort(r)
	return r
}

// snapshotLoop records Stats 100ms before every whole second until ctx
// ends: the requests between it and the next fire's first Execute are the
// fire's requests before Execute.
func (t *fireTrack) snapshotLoop(ctx context.Context) {
	for {
		next := time.Now().Truncate(time.Second).Add(900 * time.Millisecond)
		if !next.After(time.Now()) {
			next = next.Add(time.Second)
		}
		if sleepUntil(ctx, next) != nil {
			return
		}
		s := t.rc.Stats()
		t.mu.Lock()
		t.pre[next.Add(100*time.Millisecond).UnixMilli()] = s
		t.mu.Unlock()
	}
}

// measureRequests measures, for each item count, the registry requests
// one instance sends per steady-state fire, by kind, and the fire's
// duration.
func (b *bench) measureRequests(ctx context.Context) error {
	for _, items := range b.cfg.reqItems {
		if err := b.requestsFor(ctx, items); err != nil {
			fmt.Println("bench requests" + new(benchkit.KV).Add("items", items).Add("error", err.Error()).String())
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

func (b *bench) requestsFor(ctx context.Context, items int) error {
	ns := fmt.Sprintf("req%d", items)
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
	s, err := job.NewScheduler(rc, job.WithServerID("req"), job.WithLogger(logger))
	if err != nil {
		return err
	}
	tr := &fireTrack{rc: rc, fires: make(map[int64]*fireRec), pre: make(map[int64]regcenter.Stats), stood: make(map[int64]int)}
	if err := s.Add(cctx, job.Config{Name: "fire", Cron: "* * * * * *", ShardingTotalCount: items}, job.SimpleFunc(tr.execute)); err != nil {
		return err
	}
	snapCtx, stopSnap := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { tr.snapshotLoop(snapCtx) })
	defer func() {
		stopSnap()
		wg.Wait()
	}()
	startStats := rc.Stats()
	t0 := time.Now()
	if err := s.Start(cctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Shutdown(sctx); err != nil {
			b.log.Warn("shutdown", "err", err)
		}
	}()
	startReq := rc.Stats().Sub(startStats).Total()

	// Warm-up: the first fire reshards; wait for two complete fires.
	deadline := time.Now().Add(b.cfg.reqDeadline)
	for len(tr.complete(items)) < 2 {
		if time.Now().After(deadline) {
			return b.reportCollapse(tr, items, startReq, time.Since(t0))
		}
		if err := benchkit.SleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	fires := b.cfg.reqFires
	if items > 1000 {
		fires = b.cfg.reqBigFires
	}
	// Measure from half a second past a whole second to half a second past
	// another: the window holds exactly `fires` scheduled fires.
	w0 := time.Now().Truncate(time.Second).Add(1500 * time.Millisecond)
	if err := sleepUntil(ctx, w0); err != nil {
		return err
	}
	s0 := rc.Stats()
	warmReq := s0.Total() - startStats.Total() - startReq
	p0, perr0 := b.packetsReceived(ctx)
	w1 := w0.Add(time.Duration(fires) * time.Second)
	if err := sleepUntil(ctx, w1); err != nil {
		return err
	}
	d := rc.Stats().Sub(s0)
	p1, perr1 := b.packetsReceived(ctx)

	// Fires scheduled in the window, and what became of them. A fire still
	// running at w1 is given up to ten more seconds (and counted as
	// incomplete if it needs more).
	var inWindow []int64
	for ms := w0.Truncate(time.Second).Add(time.Second); ms.Before(w1); ms = ms.Add(time.Second) {
		inWindow = append(inWindow, ms.UnixMilli())
	}
	waitEnd := time.Now().Add(10 * time.Second)
	for time.Now().Before(waitEnd) && !allComplete(tr, inWindow, items) {
		if err := benchkit.SleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	var durs, before []float64
	var bd regcenter.Stats
	completed, madeUp := 0, 0
	tr.mu.Lock()
	for _, ms := range inWindow {
		f := tr.fires[ms]
		ran := tr.stood[ms]
		if f != nil {
			ran += f.items
		}
		if ran >= items && (f == nil || f.items < items) {
			madeUp++ // some of its items by make-up runs standing for it
		}
		if f == nil {
			continue
		}
		if f.items >= items {
			completed++
			durs = append(durs, float64(f.lastEnd.Sub(time.UnixMilli(ms)))/float64(time.Millisecond))
		}
		if pre, ok := tr.pre[ms]; ok {
			x := f.atEnter.Sub(pre)
			before = append(before, float64(x.Total()))
			bd = addStats(bd, x)
		}
	}
	tr.mu.Unlock()

	n := float64(fires)
	k := new(benchkit.KV).Add("items", items).Add("fires", fires).Add("completed", completed).
		Add("made_up", madeUp).Add("lost", fires-completed-madeUp).
		Add("req_per_fire", float64(d.Total())/n).
		Add("reads", float64(d.Reads)/n).Add("writes", float64(d.Writes)/n).
		Add("multis", float64(d.Multis)/n).Add("watches", float64(d.Watches)/n).Add("write_ops", float64(d.WriteOps)/n).
		Add("before_execute_p50", benchkit.Percentile(before, 50)).Add("before_execute_max", benchkit.Max(before))
	if len(before) > 0 {
		nb := float64(len(before))
		k.Add("before_reads", float64(bd.Reads)/nb).Add("before_writes", float64(bd.Writes)/nb).
			Add("before_multis", float64(bd.Multis)/nb).Add("before_watches", float64(bd.Watches)/nb)
	}
	if perr0 == nil && perr1 == nil {
		// The server counts every packet: requests, the session's pings,
		// and the four-letter word itself.
		k.Add("server_packets_per_fire", float64(p1-p0)/n)
	} else {
		k.Add("server_packets", fmt.Sprint(errorsOr(perr0, perr1)))
	}
	k.Add("fire_dur_p50", durMS(benchkit.Percentile(durs, 50))).Add("fire_dur_max", durMS(benchkit.Max(durs))).
		Add("start_to_first_fire_done", startDur(t0, tr, items)).Add("start_requests", startReq).
		Add("warmup_requests", warmReq)
	fmt.Println("bench requests" + k.String())
	b.summary.Add(fmt.Sprintf("req_per_fire_%d", items), float64(d.Total())/n).
		Add(fmt.Sprintf("fire_dur_p50_%d", items), durMS(benchkit.Percentile(durs, 50)))
	if items == 1 {
		b.summary.Add("req_before_execute_1", benchkit.Percentile(before, 50))
	}
	return nil
}

// startDur is the time from Start to the end of the first complete fire.
func startDur(t0 time.Time, tr *fireTrack, items int) time.Duration {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var first time.Time
	for _, f := range tr.fires {
		if f.items < items {
			continue
		}
		if first.IsZero() || f.lastEnd.Before(first) {
			first = f.lastEnd
		}
	}
	if first.IsZero() {
		return 0
	}
	return first.Sub(t0)
}

func allComplete(tr *fireTrack, fires []int64, items int) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, ms := range fires {
		ran := tr.stood[ms]
		if f := tr.fires[ms]; f != nil {
			ran += f.items
		}
		if ran < items {
			return false
		}
	}
	return true
}

// reportCollapse reports a job whose first fires did not complete in time.
func (b *bench) reportCollapse(tr *fireTrack, items int, startReq int64, since time.Duration) error {
	tr.mu.Lock()
	fires, ran := len(tr.fires), 0
	for _, f := range tr.fires {
		ran += f.items
	}
	tr.mu.Unlock()
	k := new(benchkit.KV).Add("items", items).Add("collapsed", "no two complete fires").Add("waited", since.Round(time.Millisecond)).
		Add("fires_started", fires).Add("executions", ran).Add("requests", tr.rc.Stats().Total()).Add("start_requests", startReq)
	fmt.Println("bench requests" + k.String())
	b.summary.Add(fmt.Sprintf("req_per_fire_%d", items), "collapsed")
	return nil
}

// durMS is a time in milliseconds, printed with an "ms" suffix (NaN when
// there was nothing to measure).
func durMS(ms float64) benchkit.MS { return benchkit.MS(ms) }

func errorsOr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func addStats(a, b regcenter.Stats) regcenter.Stats {
	return regcenter.Stats{Reads: a.Reads + b.Reads, Writes: a.Writes + b.Writes, Multis: a.Multis + b.Multis, Watches: a.Watches + b.Watches,
		WriteOps: a.WriteOps + b.WriteOps}
}
