package main

import (
	"github.com/shardjob/shardjob/tools/benchkit"

	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// measureKill runs, for each session timeout, three instance processes with
// one job of killItems items firing every second (failover on), kills one
// that holds items with SIGKILL, and measures the time until every item it
// held has started on another instance.
func (b *bench) measureKill(ctx context.Context) error {
	for _, st := range b.cfg.killTimeouts {
		if err := b.killWith(ctx, st); err != nil {
			fmt.Println("bench kill" + new(benchkit.KV).Add("session_timeout", st).Add("error", err.Error()).String())
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

func (b *bench) killWith(ctx context.Context, sessionTimeout time.Duration) error {
	const procs = 3
	items := b.cfg.killItems
	ns := fmt.Sprintf("kill%dms", sessionTimeout.Milliseconds())
	spec := instSpec{namespace: ns, jobs: 1, items: items, cron: "* * * * * *", failover: true, sessionTimeout: sessionTimeout}
	col := &collector{}
	ins, err := b.startInstances(ctx, procs, spec, col)
	if err != nil {
		return err
	}
	defer b.stopAll(ins)

	// Wait for a settled assignment: two consecutive complete fires with
	// the same item → instance map, every instance holding items.
	var owners map[int]int
	if err := waitFor(ctx, time.Minute, func() bool {
		owners = settled(col.snapshot(), items, procs)
		return owners != nil
	}); err != nil {
		return fmt.Errorf("assignment did not settle: %w", err)
	}
	leader := b.leaderOf(ctx, ns, "j0")
	// The victim: an instance holding items that is not the leader (the
	// common case), else the last one.
	victim := ins[len(ins)-1]
	for i := len(ins) - 1; i >= 0; i-- {
		if ins[i].id != leader {
			victim = ins[i]
			break
		}
	}
	var held []int
	for it, o := range owners {
		if o == victim.idx {
			held = append(held, it)
		}
	}
	slices.Sort(held)

	tk := time.Now()
	if err := victim.Kill(); err != nil {
		return err
	}
	first := make(map[int]execRec)
	err = waitFor(ctx, sessionTimeout+20*time.Second, func() bool {
		for _, e := range col.snapshot() {
			if e.inst == victim.idx || e.entered <= tk.UnixNano() || !slices.Contains(held, e.item) {
				continue
			}
			if f, ok := first[e.item]; !ok || e.entered < f.entered {
				first[e.item] = e
			}
		}
		return len(first) == len(held)
	})
	k := new(benchkit.KV).Add("session_timeout", sessionTimeout).Add("items", items).Add("procs", procs).
		Add("killed", victim.id).Add("leader", leader).Add("held", benchkit.JoinInts(held, "/"))
	if err != nil {
		k.Add("moved", len(first)).Add("not_moved_within", sessionTimeout+20*time.Second)
		fmt.Println("bench kill" + k.String())
		b.summary.Add(fmt.Sprintf("kill_elsewhere_%v", sessionTimeout), "not-all")
		return nil
	}
	var last time.Duration
	kinds := make(map[string]int)
	for _, e := range first {
		last = max(last, time.Duration(e.entered-tk.UnixNano()))
		kinds[e.kind]++
	}
	var ks []string
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		ks = append(ks, fmt.Sprintf("%s:%d", kind, kinds[kind]))
	}
	k.Add("all_elsewhere_after", last.Round(time.Millisecond)).Add("over_session_timeout", (last-sessionTimeout).Round(time.Millisecond)).
		Add("first_run_kinds", strings.Join(ks, ","))
	// The survivors' own items meanwhile: does the reshard hold their fires
	// up? Fire latency of their plain runs from the kill until two seconds
	// after the session ended (the reshard is in there).
	until := tk.Add(sessionTimeout + 2*time.Second)
	if err := sleepUntil(ctx, until.Add(time.Second)); err != nil {
		return err
	}
	var own []float64
	for _, e := range col.snapshot() {
		if e.inst != victim.idx && !slices.Contains(held, e.item) && e.kind == "fire" &&
			e.fire >= tk.UnixMilli() && e.fire < until.UnixMilli() {
			own = append(own, e.latencyMS())
		}
	}
	k.Add("survivors_runs", len(own)).Add("survivors_p50", durMS(benchkit.Percentile(own, 50))).Add("survivors_max", durMS(benchkit.Max(own)))
	fmt.Println("bench kill" + k.String())
	b.summary.Add(fmt.Sprintf("kill_elsewhere_%v", sessionTimeout), last.Round(time.Millisecond))
	return nil
}

// settled returns the item → instance map of the last complete fire when
// the fire before it had the same map and every instance holds items, else
// nil.
func settled(es []execRec, items, procs int) map[int]int {
	byFire := make(map[int64]map[int]int)
	for _, e := range es {
		if e.kind != "fire" {
			continue
		}
		m := byFire[e.fire]
		if m == nil {
			m = make(map[int]int)
			byFire[e.fire] = m
		}
		m[e.item] = e.inst
	}
	var complete []int64
	for f, m := range byFire {
		if len(m) == items {
			complete = append(complete, f)
		}
	}
	slices.Sort(complete)
	if len(complete) < 2 {
		return nil
	}
	a, z := byFire[complete[len(complete)-2]], byFire[complete[len(complete)-1]]
	if !maps.Equal(a, z) {
		return nil
	}
	holders := make(map[int]bool)
	for _, o := range z {
		holders[o] = true
	}
	if len(holders) < min(procs, items) {
		return nil
	}
	return z
}

// leaderOf reads a job's leader from the registry (layout: DESIGN.md §3), or
// returns "?" when it cannot.
func (b *bench) leaderOf(ctx context.Context, ns, jobName string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rc, err := b.reg.Open(ctx, ns, b.log)
	if err != nil {
		b.log.Warn("read leader", "err", err)
		return "?"
	}
	defer rc.Close()
	data, _, err := rc.Get(ctx, "/"+jobName+"/leader/election/host")
	if err != nil {
		b.log.Warn("read leader", "err", err)
		return "?"
	}
	return string(data)
}
