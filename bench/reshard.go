package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
	"github.com/shardjob/shardjob/tools/benchkit"
)

// reshardPeriod is how often the reshard benchmark's job fires: long
// enough for the newcomers to join between two fires.
const (
	reshardCron   = "*/15 * * * * *"
	reshardPeriod = 15 * time.Second
)

// reshardInst is one in-process instance: its own session and scheduler.
type reshardInst struct {
	rc    *zookeeper.Center
	sched *job.Scheduler
}

// execLog records the executions of every in-process instance.
type execLog struct {
	mu   sync.Mutex
	runs []reshardRun
}

type reshardRun struct {
	inst  int
	item  int
	fire  int64 // unix ms
	start int64 // unix ns
	kind  job.Kind
}

func (l *execLog) add(r reshardRun) {
	l.mu.Lock()
	l.runs = append(l.runs, r)
	l.mu.Unlock()
}

func (l *execLog) snapshot() []reshardRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.runs)
}

func (b *bench) measureReshard(ctx context.Context) error {
	var errs []error
	for _, items := range b.cfg.rsItems {
		if err := b.reshardRun(ctx, items, b.cfg.rsInstances); err != nil {
			fmt.Println("bench reshard" + new(benchkit.KV).Add("items", items).Add("error", err.Error()).String())
			errs = append(errs, fmt.Errorf("%d items: %w", items, err))
		}
	}
	return errors.Join(errs...)
}

// reshardRun starts one instance with a job of items items, lets it run a
// fire, then starts n-1 more in the same process, each on its own session,
// between two fires. The next fire finds the reshard due: it measures the
// time from that fire to every instance running its new items, and the
// size of the reshard's transaction (its operations and the assignments
// it writes).
func (b *bench) reshardRun(ctx context.Context, items, n int) error {
	ns := fmt.Sprintf("reshard-%d", items)
	const jobName = "j0"
	elog := &execLog{}
	insts := make([]*reshardInst, n)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for _, in := range insts {
			if in == nil {
				continue
			}
			wg.Go(func() {
				if err := in.sched.Shutdown(sctx); err != nil {
					b.log.Warn("reshard: shutdown", "err", err)
				}
				if err := in.rc.Close(); err != nil {
					b.log.Warn("reshard: close session", "err", err)
				}
			})
		}
		wg.Wait()
	}()
	start := func(ctx context.Context, i int) error {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		rc, err := zookeeper.Open(cctx, regcenter.Config{Servers: b.zk.Servers(), Namespace: ns}, regcenter.WithLogger(b.sdkLog()))
		if err != nil {
			return err
		}
		opts := []job.Option{job.WithServerID(fmt.Sprintf("r%03d", i)), job.WithLogger(b.sdkLog())}
		if b.cfg.rsFireLead >= 0 {
			opts = append(opts, job.WithFireLead(b.cfg.rsFireLead))
		}
		s, err := job.NewScheduler(rc, opts...)
		if err != nil {
			return errors.Join(err, rc.Close())
		}
		insts[i] = &reshardInst{rc: rc, sched: s}
		execute := job.SimpleFunc(func(_ context.Context, sc job.ShardingContext) error {
			elog.add(reshardRun{inst: i, item: sc.Item, fire: sc.FireTime.UnixMilli(), start: time.Now().UnixNano(), kind: sc.Kind})
			return nil
		})
		if err := s.Add(cctx, job.Config{Name: jobName, Cron: reshardCron, ShardingTotalCount: items}, execute); err != nil {
			return err
		}
		return s.Start(cctx)
	}
	if err := start(ctx, 0); err != nil {
		return err
	}
	// A fire that ran every item on the one instance.
	var f0 int64
	if err := waitFor(ctx, 2*reshardPeriod+30*time.Second, 100*time.Millisecond, func() (bool, error) {
		per := map[int64]int{}
		for _, r := range elog.snapshot() {
			per[r.fire]++
			if per[r.fire] == items {
				f0 = r.fire
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return fmt.Errorf("the first instance never ran a whole fire: %w", err)
	}
	// Join the others, a few at a time, right after that fire.
	t0 := time.Now()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var joinErrs []error
	for i := 1; i < n; i++ {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			if err := start(ctx, i); err != nil {
				mu.Lock()
				joinErrs = append(joinErrs, fmt.Errorf("instance %d: %w", i, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(joinErrs...); err != nil {
		return err
	}
	joined := time.Now()
	fire := joined.Truncate(reshardPeriod).Add(reshardPeriod)

	conn, events, err := zk.Connect(b.zk.Servers(), 10*time.Second, zk.WithLogger(log.New(discard{}, "", 0)))
	if err != nil {
		return err
	}
	var drain sync.WaitGroup
	drain.Go(func() {
		for range events { // closed by conn.Close
		}
	})
	defer func() {
		conn.Close()
		drain.Wait()
	}()
	paths := layout.Job(jobName)
	root := "/" + ns
	// The flag's deletion is the reshard's transaction committing: a watch
	// on it splits the time into the reshard and the instances' start.
	due, _, flagWatch, err := conn.ExistsW(root + paths.Necessary())
	if err != nil {
		return err
	}
	var committed time.Time
	var watchWG sync.WaitGroup
	defer watchWG.Wait()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if due {
		watchWG.Go(func() {
			// Late joiners may touch the flag before the fire; watch on
			// until it is gone.
			w := flagWatch
			for {
				select {
				case ev := <-w:
					if ev.Type == zk.EventNodeDeleted {
						committed = time.Now()
						return
					}
					exists, _, next, err := conn.ExistsW(root + paths.Necessary())
					if err != nil || !exists {
						if err == nil {
							committed = time.Now()
						}
						return
					}
					w = next
				case <-wctx.Done():
					return
				}
			}
		})
	}

	// Every item of that fire ran, or 60 s passed.
	fireMS := fire.UnixMilli()
	var atFire []reshardRun
	werr := waitFor(ctx, time.Until(fire)+60*time.Second, 50*time.Millisecond, func() (bool, error) {
		atFire = atFire[:0]
		for _, r := range elog.snapshot() {
			if r.fire == fireMS {
				atFire = append(atFire, r)
			}
		}
		return len(atFire) >= items, nil
	})
	stopWatch()
	watchWG.Wait()
	firstOf := map[int]int64{}
	itemRuns := map[int]int{}
	var last int64
	kinds := map[job.Kind]int{}
	for _, r := range atFire {
		if s, ok := firstOf[r.inst]; !ok || r.start < s {
			firstOf[r.inst] = r.start
		}
		itemRuns[r.item]++
		last = max(last, r.start)
		kinds[r.kind]++
	}
	var lastFirst int64
	for _, s := range firstOf {
		lastFirst = max(lastFirst, s)
	}
	twice := 0
	for _, c := range itemRuns {
		if c > 1 {
			twice++
		}
	}

	// The transaction: the fence, one write per server's assignment, and
	// the two flag deletions.
	servers, _, err := conn.Children(root + paths.Servers())
	if err != nil {
		return err
	}
	dataBytes, pathBytes, assigned := 0, 0, 0
	for _, sv := range servers {
		p := root + paths.Flag(sv, layout.Sharding)
		data, _, err := conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		dataBytes += len(data)
		pathBytes += len(p)
		if len(data) > 0 {
			assigned++
		}
	}
	lead := job.DefaultFireLead
	if b.cfg.rsFireLead >= 0 {
		lead = b.cfg.rsFireLead
	}
	k := new(benchkit.KV).Add("items", items).Add("instances", n).Add("fire_lead", lead).Add("join", joined.Sub(t0).Round(time.Millisecond)).
		Add("reshard_due_before_fire", due).Add("instances_ran", len(firstOf)).Add("instances_assigned", assigned).
		Add("items_ran", len(itemRuns)).Add("items_twice", twice).
		Add("fire_to_every_instance_running", time.Duration(lastFirst-fire.UnixNano())).
		Add("fire_to_last_item_started", time.Duration(last-fire.UnixNano())).
		Add("fire_to_reshard_committed", durSince(committed, fire)).
		Add("tx_ops", 1+len(servers)+2).Add("tx_assignment_bytes", dataBytes).Add("tx_path_bytes", pathBytes).
		Add("first_fire_one_instance", time.UnixMilli(f0).Format("15:04:05")).Add("load1", benchkit.LoadAvg())
	for kind, c := range kinds {
		k.Add("kind_"+string(kind), c)
	}
	fmt.Println("bench reshard" + k.String())
	b.summary.Add(fmt.Sprintf("reshard_%d_%d", n, items), time.Duration(lastFirst-fire.UnixNano()))
	if werr != nil {
		return fmt.Errorf("the fire after the scale-out ran %d of %d items: %w", len(itemRuns), items, werr)
	}
	return nil
}

// durSince is t - from, or -1 when t is zero (the moment was not seen).
func durSince(t, from time.Time) time.Duration {
	if t.IsZero() {
		return -1
	}
	return t.Sub(from)
}
