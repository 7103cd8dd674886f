package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/tools/benchkit"
)

// failoverCron and failoverWork: a fire every 4 s whose items run 3 s, so
// that a kill 300 ms after a fire finds them running and a 2 s session
// expires before they would have finished.
const (
	failoverCron    = "*/4 * * * * *"
	failoverPeriod  = 4 * time.Second
	failoverWork    = 3 * time.Second
	failoverKillLag = 300 * time.Millisecond
)

// measureFailover runs three instance processes with one job of foItems
// items (failover on) and, foTrials times, kills with SIGKILL the one
// running the most items 300 ms after a fire. It measures, per item the
// victim was running, the delay from the session's expiry as ZooKeeper
// sees it (the deletion of the victim's ephemeral status node, watched)
// to the item starting on another instance, and from the kill. After each
// trial a new instance takes the victim's place.
func (b *bench) measureFailover(ctx context.Context) error {
	const ns = "failover"
	const jobName = "j0"
	dir := filepath.Join(b.dir, ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := []string{"-system", "shardjob", "-zk", b.zk.ConnectString(), "-namespace", ns, "-jobs", "1",
		"-items", strconv.Itoa(b.cfg.foItems), "-failover", "-session-timeout", b.cfg.foTimeout.String(),
		"-cron", failoverCron, "-work", failoverWork.String()}

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

	var nodes []*node
	defer func() { b.stopNodes(nodes) }()
	next := 0
	spawn := func() (*node, error) {
		n, err := b.startNode(dir, next, "f"+strconv.Itoa(next), args)
		next++
		if err == nil {
			nodes = append(nodes, n)
		}
		return n, err
	}
	alive := func() []*node {
		var r []*node
		for _, n := range nodes {
			if n.proc.Alive() {
				r = append(r, n)
			}
		}
		return r
	}
	for range 3 {
		if _, err := spawn(); err != nil {
			return err
		}
	}

	var fromExpiry, fromKill, perTrialExpiry []float64
	var kinds = map[string]int{}
	trials, missed := 0, 0
	for trials < b.cfg.foTrials && ctx.Err() == nil {
		// Every live instance started, and a fire after it joined.
		if err := waitFor(ctx, 60*time.Second, 50*time.Millisecond, func() (bool, error) {
			for _, n := range alive() {
				r, err := readRecords(n)
				if err != nil || r.started == 0 {
					return false, err
				}
			}
			return true, nil
		}); err != nil {
			return fmt.Errorf("instances not started: %w", err)
		}
		// Two fires from now: the first one reshards for a newcomer.
		fire := time.Now().Truncate(failoverPeriod).Add(2 * failoverPeriod)
		if err := sleepUntil(ctx, fire.Add(failoverKillLag)); err != nil {
			return err
		}
		live := alive()
		recs, err := readAll(live)
		if err != nil {
			return err
		}
		var victim *node
		var items []int
		for i, r := range recs {
			var its []int
			for _, run := range r.runs {
				if run.fire == fire.UnixMilli() && run.kind == "fire" {
					its = append(its, run.item)
				}
			}
			if len(its) > len(items) {
				victim, items = live[i], its
			}
		}
		if victim == nil {
			missed++
			b.log.Warn("failover: no instance running the fire; trying the next", "fire", fire)
			if missed > 5 {
				return errors.New("failover: five fires in a row ran nowhere")
			}
			continue
		}
		status := "/" + ns + layout.Job(jobName).Flag(victim.id, layout.Status)
		exists, _, watch, err := conn.ExistsW(status)
		if err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("%s has no status node %s", victim.id, status)
		}
		tKill := time.Now()
		if err := victim.proc.Kill(); err != nil {
			return err
		}
		var tExp time.Time
		wctx, cancel := context.WithTimeout(ctx, b.cfg.foTimeout+10*time.Second)
		select {
		case ev := <-watch:
			tExp = time.Now()
			if ev.Type != zk.EventNodeDeleted {
				cancel()
				return fmt.Errorf("watch on %s: %v", status, ev)
			}
		case <-wctx.Done():
			cancel()
			return fmt.Errorf("%s's status node still there %v after the kill", victim.id, time.Since(tKill))
		}
		cancel()
		// Every item the victim was running started elsewhere.
		starts := map[int]runRec{}
		if err := waitFor(ctx, 30*time.Second, 20*time.Millisecond, func() (bool, error) {
			recs, err := readAll(alive())
			if err != nil {
				return false, err
			}
			for _, r := range recs {
				for _, run := range r.runs {
					if run.start <= tKill.UnixNano() {
						continue
					}
					if s, ok := starts[run.item]; !ok || run.start < s.start {
						starts[run.item] = run
					}
				}
			}
			for _, it := range items {
				if _, ok := starts[it]; !ok {
					return false, nil
				}
			}
			return true, nil
		}); err != nil {
			return fmt.Errorf("trial %d: the victim's items %v not all started elsewhere: %w", trials, items, err)
		}
		worst := math.Inf(-1)
		for _, it := range items {
			s := starts[it]
			d := float64(s.start-tExp.UnixNano()) / 1e6
			fromExpiry = append(fromExpiry, d)
			fromKill = append(fromKill, float64(s.start-tKill.UnixNano())/1e6)
			kinds[s.kind]++
			worst = max(worst, d)
		}
		perTrialExpiry = append(perTrialExpiry, worst)
		trials++
		fmt.Println("bench failover_trial" + new(benchkit.KV).Add("trial", trials).Add("killed", victim.id).Add("items", len(items)).
			Add("expiry_after_kill", benchkit.MS(float64(tExp.Sub(tKill))/1e6)).Add("all_started_after_expiry", benchkit.MS(worst)).String())
		if _, err := spawn(); err != nil {
			return err
		}
	}
	k := new(benchkit.KV).Add("trials", trials).Add("session_timeout", b.cfg.foTimeout).Add("items", b.cfg.foItems).
		Add("instances", 3).Add("zk_tick", 200*time.Millisecond).Add("item_starts", len(fromExpiry)).
		Add("after_expiry_p50", benchkit.MS(benchkit.Percentile(fromExpiry, 50))).
		Add("after_expiry_p99", benchkit.MS(benchkit.Percentile(fromExpiry, 99))).
		Add("after_expiry_max", benchkit.MS(benchkit.Max(fromExpiry))).
		Add("after_kill_p50", benchkit.MS(benchkit.Percentile(fromKill, 50))).
		Add("after_kill_p99", benchkit.MS(benchkit.Percentile(fromKill, 99))).
		Add("after_kill_max", benchkit.MS(benchkit.Max(fromKill))).
		Add("trial_all_started_after_expiry_p50", benchkit.MS(benchkit.Percentile(perTrialExpiry, 50))).
		Add("trial_all_started_after_expiry_max", benchkit.MS(benchkit.Max(perTrialExpiry)))
	for kind, n := range kinds {
		k.Add("kind_"+kind, n)
	}
	fmt.Println("bench failover" + k.Add("load1", benchkit.LoadAvg()).String())
	b.summary.Add("failover_p99_after_expiry", benchkit.MS(benchkit.Percentile(fromExpiry, 99)))
	return nil
}

// discard is an io.Writer that drops everything (go-zookeeper's logger).
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
