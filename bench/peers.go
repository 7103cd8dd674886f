package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/tools/benchkit"
)

// systemArgs returns the node flags that select system, and whether it is
// known. The settings are the systems' defaults except where the name
// says "tuned"; describeSystem states them.
func systemArgs(system string, c config) ([]string, bool) {
	switch system {
	case "shardjob":
		return []string{"-system", "shardjob"}, true
	case "shardjob-tuned":
		return []string{"-system", "shardjob", "-session-timeout", c.tunedTimeout.String()}, true
	case "shardjob-nolead":
		return []string{"-system", "shardjob", "-fire-lead", "0s"}, true
	case "shardjob-unmonitored":
		return []string{"-system", "shardjob", "-unmonitored"}, true
	case "shardjob-everyrun":
		return []string{"-system", "shardjob", "-no-journal"}, true
	case "shardjob-etcd":
		return []string{"-system", "shardjob"}, true // on etcd: systemRun adds -etcd
	case "gocron":
		return []string{"-system", "gocron"}, true
	case "dcron":
		return []string{"-system", "dcron"}, true
	case "dcron-etcd":
		return []string{"-system", "dcron-etcd"}, true
	}
	return nil, false
}

// The registries the systems coordinate through.
const (
	regZooKeeper = "zookeeper"
	regEtcd      = "etcd"
	regRedis     = "redis"
)

// registryOf names the server system coordinates through.
func registryOf(system string) string {
	switch {
	case strings.HasSuffix(system, "-etcd"):
		return regEtcd
	case strings.HasPrefix(system, "shardjob"):
		return regZooKeeper
	}
	return regRedis
}

// registries returns which servers the chosen benchmarks need: ZooKeeper
// for -failover and -reshard and for the ZooKeeper systems of -peers and
// -firecost, etcd and Redis only for systems of theirs (-dispatch brings
// its own PostgreSQL).
func registries(c config) map[string]bool {
	need := map[string]bool{regZooKeeper: c.failover || c.reshard}
	var systems []string
	if c.peers {
		systems = append(systems, c.peerSystems...)
	}
	if c.fireCost {
		systems = append(systems, c.fcSystems...)
	}
	for _, s := range systems {
		need[registryOf(s)] = true
	}
	return need
}

// describeSystem states a system's settings as the benchmark runs it.
func describeSystem(system string, c config) string {
	switch system {
	case "shardjob":
		return "defaults: session_timeout=10s fire_lead=" + leadOf1s() + " completion_journal=on failover=off one_item_per_job"
	case "shardjob-tuned":
		return "session_timeout=" + c.tunedTimeout.String() + " fire_lead=" + leadOf1s() + " failover=off one_item_per_job"
	case "shardjob-nolead":
		return "defaults but fire_lead=0 (each fire claims its items at its time): session_timeout=10s failover=off one_item_per_job"
	case "shardjob-everyrun":
		return "defaults but every run's record written at its completion, no completion journal (job.WithCompletionJournal(false)): session_timeout=10s fire_lead=" + leadOf1s() + " failover=off one_item_per_job"
	case "shardjob-unmonitored":
		return "defaults but Unmonitored (monitorExecution: false: no running or completed marks, so no make-up runs): session_timeout=10s fire_lead=" + leadOf1s() + " failover=off one_item_per_job"
	case "gocron":
		return "gocron/v2 v2.21.2 + gocron-redis-lock/v2 v2.0.1: WithTries(1), lock expiry 8s (redsync default), lock key = job name"
	case "shardjob-etcd":
		return "defaults on etcd (" + etcdMembers(c) + "): lease_ttl=10s (the session timeout) fire_lead=" + leadOf1s() + " failover=off one_item_per_job"
	case "dcron":
		return "dcron v0.5.0 + its Redis driver: node TTL 5s, heartbeat 2.5s, node list refresh 3s (defaults), consistent hash"
	case "dcron-etcd":
		return "dcron v0.5.0 + its etcd driver (" + etcdMembers(c) + "): node key on a lease of 5s (the driver's minimum) kept alive by the etcd client, watch on the service's prefix, node list refresh 3s (defaults), consistent hash, jobs wrapped in cron.Recover (a fire before the first node list refresh otherwise panics the process)"
	}
	return ""
}

// leadOf1s states the SDK's default fire lead as it applies to a job
// firing every second: at most half the period.
func leadOf1s() string {
	return min(job.DefaultFireLead, time.Second/2).String() + " (default " + job.DefaultFireLead.String() + ", capped at period/2)"
}

// recordIntervalOf is how long system's records may wait unwritten: the
// runs of that long before a kill -9 are made up again after it.
func recordIntervalOf(system string) time.Duration {
	if system == "shardjob-everyrun" || system == "shardjob-unmonitored" || !strings.HasPrefix(system, "shardjob") {
		return 0
	}
	return job.DefaultRecordInterval
}

func usesZK(system string) bool { return registryOf(system) == regZooKeeper }

// etcdMembers states the etcd cluster's size as the output shows it.
func etcdMembers(c config) string {
	if c.etcdMembers == 1 {
		return "1 member"
	}
	return strconv.Itoa(c.etcdMembers) + " members"
}

// sumCPU adds up CPU seconds.
func sumCPU(cpu []float64) float64 {
	var s float64
	for _, c := range cpu {
		s += c
	}
	return s
}

// phaseCPU splits the CPU the processes spent between two readings,
// from and to, each the nodes' CPU followed by the server's processes':
// the nodes' together, and the server's (a ZooKeeper or Redis process, or
// every member of the etcd cluster) together.
func phaseCPU(from, to []float64, nodes int) (node, server float64) {
	return sumCPU(to[:nodes]) - sumCPU(from[:nodes]), sumCPU(to[nodes:]) - sumCPU(from[nodes:])
}

// phaseResult is one phase's figures: before or after the kill.
type phaseResult struct {
	name                             string
	ticks                            int // ticks per job in the phase
	once, twicePlus, never           int // (job, tick) pairs run exactly once, more, never
	madeUp                           int // of once: stood for by a make-up run (shardjob's misfire/failover runs)
	twiceKilled                      int // of twicePlus: one of the runs was the victim's, in flight when it was killed
	twiceUnrecorded                  int // of twicePlus: the victim's run, its record not yet written at the kill, made up again after it
	runs                             int
	perNode                          []int // runs per node in the phase (the victim's 0 after the kill)
	lat                              []float64
	nodeCPU, serverCPU               float64 // seconds in the phase
	nodeCPUPer1000, serverCPUPer1000 float64
}

// peerResult is one system's run with J jobs.
type peerResult struct {
	system, settings  string
	jobs              int
	readyS, firstAllS float64
	victim            string
	phases            [2]phaseResult
	victimJobs        int
	recovery          []float64 // seconds from the kill until each of the victim's jobs ran elsewhere
	notRecovered      int
	// series is, per second from the measured start to the end, the runs
	// started in it (of any kind) as a share of the jobs; x is the second's
	// start in seconds from the tick the kill came after.
	seriesX, seriesY []float64
}

func (b *bench) measurePeers(ctx context.Context) error {
	if err := b.warmUp(ctx, b.cfg.peerSystems); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return b.eachRun(ctx, "peers", b.cfg.peerJobs, b.cfg.peerSystems, func(sys string, j int) error {
		r, err := b.peerRun(ctx, sys, j)
		if err != nil {
			return err
		}
		b.peers = append(b.peers, r)
		r.print()
		pre := fmt.Sprintf("%s_j%d_", r.system, r.jobs)
		_, sp := spread(r.phases[0].perNode, -1)
		b.summary.Add(pre+"once", fmt.Sprintf("%d/%d", r.phases[0].once+r.phases[1].once, r.phases[0].ticks*jobsOr1(r.jobs)+r.phases[1].ticks*jobsOr1(r.jobs))).
			Add(pre+"p99", benchkit.MS(benchkit.Percentile(r.phases[0].lat, 99))).Add(pre+"spread", sp).
			Add(pre+"recovery_max_s", benchkit.Max(r.recovery))
		return nil
	})
}

// eachRun calls run for every job count and system, in that order; a run
// that fails is reported as a "bench NAME" line with its error, and the
// others still run.
func (b *bench) eachRun(ctx context.Context, name string, jobs []int, systems []string, run func(system string, jobs int) error) error {
	var errs []error
	for _, j := range jobs {
		for _, sys := range systems {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.log.Info(name, "system", sys, "jobs", j)
			if err := run(sys, j); err != nil {
				fmt.Println("bench " + name + new(benchkit.KV).Add("system", sys).Add("jobs", j).Add("error", err.Error()).String())
				errs = append(errs, fmt.Errorf("%s J=%d: %w", sys, j, err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d runs failed: %v", len(errs), len(jobs)*len(systems), errs)
	}
	return nil
}

// warmUp runs shardjob's workload unmeasured for the configured time: a
// JVM compiles its hot paths in its first minutes, at a CPU cost the first
// measured run would otherwise be charged with (Redis has no such phase).
// It runs once per program, before the first benchmark of systems that
// uses ZooKeeper.
func (b *bench) warmUp(ctx context.Context, systems []string) error {
	if b.warmed || b.cfg.peerWarmup <= 0 || !slices.ContainsFunc(systems, usesZK) {
		return nil
	}
	b.warmed = true
	dir := filepath.Join(b.dir, "peers-warmup")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := []string{"-jobs", "30", "-work", b.cfg.peerWork.String(), "-namespace", "peers-warmup", "-system", "shardjob", "-zk", b.zk.ConnectString()}
	cpu0, err := cpuOf(b.zk.PID(0))
	if err != nil {
		return err
	}
	var nodes []*node
	for i := range 3 {
		n, err := b.startNode(dir, i, fmt.Sprintf("n%d", i), args)
		if err != nil {
			b.stopNodes(nodes)
			return err
		}
		nodes = append(nodes, n)
	}
	t0 := time.Now()
	err = benchkit.SleepCtx(ctx, b.cfg.peerWarmup)
	b.stopNodes(nodes)
	if err != nil {
		return err
	}
	cpu1, err := cpuOf(b.zk.PID(0))
	if err != nil {
		return err
	}
	fmt.Println("bench peers_warmup" + new(benchkit.KV).Add("system", "shardjob").Add("jobs", 30).
		Add("seconds", time.Since(t0).Round(time.Second).Seconds()).Add("server_cpu_s", cpu1[0]-cpu0[0]).String())
	return nil
}

// systemRun prepares a run of system with J jobs for the benchmark
// named bench: its work directory, the node flags that select the system,
// its namespace and its server (a Redis flushed of earlier runs), and the
// server's pids: one, or each etcd member's.
func (b *bench) systemRun(ctx context.Context, bench, system string, jobs int) (dir string, args []string, serverPIDs []int, err error) {
	name := fmt.Sprintf("%s-%s-%d", bench, system, jobs)
	dir = filepath.Join(b.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, nil, err
	}
	sysArgs, _ := systemArgs(system, b.cfg)
	args = append([]string{"-jobs", strconv.Itoa(jobs), "-namespace", name}, sysArgs...)
	switch registryOf(system) {
	case regZooKeeper:
		return dir, append(args, "-zk", b.zk.ConnectString()), []int{b.zk.PID(0)}, nil
	case regEtcd:
		// Each run has a namespace (shardjob) or service name (dcron) of
		// its own, so nothing of an earlier run is in its way.
		pids, err := b.etcdPIDs()
		if err != nil {
			return "", nil, nil, err
		}
		return dir, append(args, "-etcd", b.etcd.ConnectString()), pids, nil
	}
	if err := b.redis.flush(ctx); err != nil {
		return "", nil, nil, err
	}
	return dir, append(args, "-redis", b.redis.addr), []int{b.redis.proc.PID()}, nil
}

// etcdPIDs returns the pid of every etcd member, or an error if one is
// not running.
func (b *bench) etcdPIDs() ([]int, error) {
	pids := make([]int, b.etcd.Size())
	for i := range pids {
		if pids[i] = b.etcd.PID(i); pids[i] == 0 {
			return nil, fmt.Errorf("etcd member %d is not running", i+1)
		}
	}
	return pids, nil
}

func (b *bench) peerRun(ctx context.Context, system string, jobs int) (*peerResult, error) {
	dir, args, serverPIDs, err := b.systemRun(ctx, "peers", system, jobs)
	if err != nil {
		return nil, err
	}
	args = append(args, "-work", b.cfg.peerWork.String())
	res := &peerResult{system: system, jobs: jobs, settings: describeSystem(system, b.cfg)}

	const nNodes = 3
	t0 := time.Now()
	var nodes []*node
	defer func() { b.stopNodes(nodes) }()
	for i := range nNodes {
		n, err := b.startNode(dir, i, fmt.Sprintf("n%d", i), args)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}

	// Started: every node's scheduler running.
	if err := waitFor(ctx, 90*time.Second, 50*time.Millisecond, func() (bool, error) {
		recs, err := readAll(nodes)
		if err != nil {
			return false, err
		}
		var last int64
		for i, r := range recs {
			if !nodes[i].proc.Alive() {
				return false, fmt.Errorf("%s exited: %v (see %s)", nodes[i].id, nodes[i].proc.Err(), filepath.Join(dir, nodes[i].id+".log"))
			}
			if r.started == 0 {
				return false, nil
			}
			last = max(last, r.started)
		}
		res.readyS = float64(last-t0.UnixNano()) / 1e9
		return true, nil
	}); err != nil {
		return nil, fmt.Errorf("nodes not started: %w", err)
	}
	// The first tick that every job ran.
	if err := waitFor(ctx, 60*time.Second, 200*time.Millisecond, func() (bool, error) {
		recs, err := readAll(nodes)
		if err != nil {
			return false, err
		}
		byTick := map[int64]map[string]int64{} // tick → job → latest start
		for _, r := range recs {
			for _, run := range r.runs {
				m := byTick[run.tick()]
				if m == nil {
					m = map[string]int64{}
					byTick[run.tick()] = m
				}
				m[run.job] = max(m[run.job], run.start)
			}
		}
		ticks := slices.Sorted(func(yield func(int64) bool) {
			for t := range byTick {
				if !yield(t) {
					return
				}
			}
		})
		for _, t := range ticks {
			if len(byTick[t]) == jobs {
				var last int64
				for _, s := range byTick[t] {
					last = max(last, s)
				}
				res.firstAllS = float64(last-t0.UnixNano()) / 1e9
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return nil, fmt.Errorf("no tick ran every job: %w", err)
	}

	half := b.cfg.peerDuration / 2
	half = half.Truncate(time.Second)
	tw := time.Now().Truncate(time.Second).Add(2 * time.Second)
	tk := tw.Add(half)
	tend := tk.Add(half)
	pids := make([]int, 0, nNodes+len(serverPIDs))
	for _, n := range nodes {
		pids = append(pids, n.proc.PID())
	}
	pids = append(pids, serverPIDs...)

	if err := sleepUntil(ctx, tw); err != nil {
		return nil, err
	}
	cpu0, err := cpuOf(pids...)
	if err != nil {
		return nil, err
	}
	// The phases' CPU splits at the kill's tick; the kill follows it by
	// killAfter.
	if err := sleepUntil(ctx, tk); err != nil {
		return nil, err
	}
	cpu1, err := cpuOf(pids...)
	if err != nil {
		return nil, err
	}
	if err := sleepUntil(ctx, tk.Add(b.cfg.killAfter)); err != nil {
		return nil, err
	}
	recs, err := readAll(nodes)
	if err != nil {
		return nil, err
	}
	victim := 0
	best := -1
	for i, r := range recs {
		c := 0
		for _, run := range r.runs {
			if t := run.tick(); t >= tw.UnixMilli() && t < tk.UnixMilli() {
				c++
			}
		}
		if c > best {
			victim, best = i, c
		}
	}
	// The victim's CPU until it dies counts in the phase after the kill.
	cpuVictim, err := benchkit.CPUSeconds(pids[victim])
	if err != nil {
		return nil, err
	}
	tKill := time.Now()
	if err := nodes[victim].proc.Kill(); err != nil {
		return nil, err
	}
	res.victim = nodes[victim].id
	b.log.Info("killed", "node", res.victim, "runs_before", best)

	// The last tick measured is tend; its runs have started well before
	// tend + 1.5 s unless the system is late, which then shows.
	if err := sleepUntil(ctx, tend.Add(1500*time.Millisecond)); err != nil {
		return nil, err
	}
	cpu2 := slices.Clone(cpu1)
	cpu2[victim] = cpuVictim
	for i, pid := range pids {
		if i == victim {
			continue
		}
		if cpu2[i], err = benchkit.CPUSeconds(pid); err != nil {
			return nil, err
		}
	}
	b.stopNodes(nodes)
	if recs, err = readAll(nodes); err != nil {
		return nil, err
	}
	var runs []runRec
	for _, r := range recs {
		runs = append(runs, r.runs...)
	}

	cr := crash{victim: victim, kill: tKill, work: b.cfg.peerWork, unrecorded: recordIntervalOf(system)}
	before := analysePhase("before", runs, jobs, nNodes, tw.UnixMilli(), tk.UnixMilli()-1000, cr)
	before.nodeCPU, before.serverCPU = phaseCPU(cpu0, cpu1, nNodes)
	after := analysePhase("after", runs, jobs, nNodes, tk.UnixMilli(), tend.UnixMilli(), cr)
	after.nodeCPU, after.serverCPU = phaseCPU(cpu1, cpu2, nNodes)
	for _, p := range []*phaseResult{&before, &after} {
		p.nodeCPUPer1000 = p.nodeCPU / float64(p.runs) * 1000
		p.serverCPUPer1000 = p.serverCPU / float64(p.runs) * 1000
	}
	res.phases = [2]phaseResult{before, after}

	// Recovery: each job the victim ran in its last three ticks, until it
	// runs on another node.
	victimJobs := map[string]bool{}
	for _, run := range runs {
		if run.node == victim && run.tick() >= tk.UnixMilli()-3000 && run.tick() < tk.UnixMilli() {
			victimJobs[run.job] = true
		}
	}
	res.victimJobs = len(victimJobs)
	for j := range victimJobs {
		first := int64(math.MaxInt64)
		for _, run := range runs {
			if run.job == j && run.node != victim && run.start > tKill.UnixNano() {
				first = min(first, run.start)
			}
		}
		if first == math.MaxInt64 {
			res.notRecovered++
			continue
		}
		res.recovery = append(res.recovery, float64(first-tKill.UnixNano())/1e9)
	}

	// Runs started in each second around the kill, as a share of the jobs,
	// for the recovery plot: make-up runs show where they happened. Seconds
	// count from the tick the kill came after.
	started := map[int64]int{}
	for _, run := range runs {
		started[(run.start-tk.UnixNano())/int64(time.Second)-boolInt(run.start < tk.UnixNano())]++
	}
	for s := -int64(half / time.Second); s <= int64(half/time.Second); s++ {
		res.seriesX = append(res.seriesX, float64(s))
		res.seriesY = append(res.seriesY, float64(started[s])/float64(jobs))
	}
	return res, nil
}

// crash describes the kill a phase is read against: which node, when,
// how long a run takes, and how long a record may wait unwritten on the
// system (job.WithRecordInterval; 0 for the peers).
type crash struct {
	victim     int
	kill       time.Time
	work       time.Duration
	unrecorded time.Duration
}

// analysePhase counts the (job, tick) pairs of ticks from..to (unix ms,
// inclusive) by how many runs stood for them, and the runs that belong
// to those ticks: per node, and their latencies.
//
// Of the pairs counted in twicePlus, two kinds are what a kill -9 is
// documented to cause (docs/guarantees.md), and are counted apart too: a
// run of the victim that had started but not finished when it was killed
// (started within work before the kill) and was run again (twiceKilled);
// and a run of the victim that completed in the last unrecorded before the
// kill, whose record was still waiting to be written, covered again by
// another node's make-up run after the kill (twiceUnrecorded).
func analysePhase(name string, runs []runRec, jobs, nodes int, from, to int64, c crash) phaseResult {
	victim, kill, work := c.victim, c.kill, c.work
	p := phaseResult{name: name, ticks: int((to-from)/1000) + 1, perNode: make([]int, nodes)}
	type key struct {
		job  string
		tick int64
	}
	standing := map[key]int{}
	madeUp := map[key]bool{}
	killed := map[key]bool{}
	victimLate := map[key]bool{}  // ran on the victim within unrecorded before the kill
	madeUpAfter := map[key]bool{} // covered by another node's make-up run after the kill
	for _, r := range runs {
		makeUp := r.last() != r.tick() || r.kind != "fire"
		inFlight := r.node == victim && r.start <= kill.UnixNano() && r.start+int64(work) > kill.UnixNano()
		late := r.node == victim && r.start <= kill.UnixNano() && c.unrecorded > 0 && r.start > kill.Add(-c.unrecorded).UnixNano()
		after := r.node != victim && r.start > kill.UnixNano() && makeUp
		for t := max(r.tick(), from); t <= min(r.last(), to); t += 1000 {
			k := key{r.job, t}
			standing[k]++
			if inFlight {
				killed[k] = true
			}
			if late {
				victimLate[k] = true
			}
			if after {
				madeUpAfter[k] = true
			}
			if makeUp {
				madeUp[k] = true
			}
		}
		if t := r.tick(); t >= from && t <= to {
			p.runs++
			p.perNode[r.node]++
			if r.kind == "fire" {
				p.lat = append(p.lat, r.latencyMS())
			}
		}
	}
	for j := range jobs {
		job := "j" + strconv.Itoa(j)
		for t := from; t <= to; t += 1000 {
			k := key{job, t}
			switch n := standing[k]; {
			case n == 0:
				p.never++
			case n == 1:
				p.once++
				if madeUp[k] {
					p.madeUp++
				}
			default:
				p.twicePlus++
				switch {
				case killed[k]:
					p.twiceKilled++
				case n == 2 && victimLate[k] && madeUpAfter[k]:
					p.twiceUnrecorded++
				}
			}
		}
	}
	return p
}

// spread is max/min of the counts of the nodes that ran anything in the
// phase, or of all of them; inf when one ran nothing.
func spread(counts []int, skip int) (string, float64) {
	var parts []string
	lo, hi := math.MaxInt, 0
	for i, c := range counts {
		parts = append(parts, strconv.Itoa(c))
		if i == skip {
			continue
		}
		lo, hi = min(lo, c), max(hi, c)
	}
	if lo == 0 {
		return strings.Join(parts, "/"), math.Inf(1)
	}
	return strings.Join(parts, "/"), float64(hi) / float64(lo)
}

func (r *peerResult) print() {
	fmt.Println("bench peers_run" + new(benchkit.KV).Add("system", r.system).Add("jobs", r.jobs).Add("settings", r.settings).
		Add("ready_s", r.readyS).Add("first_all_s", r.firstAllS).Add("killed", r.victim).Add("load1", benchkit.LoadAvg()).String())
	for i, p := range r.phases {
		skip := -1
		if i == 1 {
			skip = int(r.victim[1] - '0')
		}
		perNode, sp := spread(p.perNode, skip)
		fmt.Println("bench peers" + new(benchkit.KV).Add("system", r.system).Add("jobs", r.jobs).Add("phase", p.name).
			Add("ticks", p.ticks).Add("once", p.once).Add("twice_plus", p.twicePlus).Add("twice_killed_rerun", p.twiceKilled).Add("twice_unrecorded", p.twiceUnrecorded).Add("never", p.never).Add("made_up", p.madeUp).
			Add("runs", p.runs).Add("runs_per_node", perNode).Add("spread", sp).
			Add("p50", benchkit.MS(benchkit.Percentile(p.lat, 50))).Add("p99", benchkit.MS(benchkit.Percentile(p.lat, 99))).
			Add("max", benchkit.MS(benchkit.Max(p.lat))).
			Add("node_cpu_s_per_1000", p.nodeCPUPer1000).Add("server_cpu_s_per_1000", p.serverCPUPer1000).String())
	}
	fmt.Println("bench peers_kill" + new(benchkit.KV).Add("system", r.system).Add("jobs", r.jobs).Add("killed", r.victim).
		Add("victim_jobs", r.victimJobs).Add("recovery_p50_s", benchkit.Percentile(r.recovery, 50)).
		Add("recovery_max_s", benchkit.Max(r.recovery)).Add("not_recovered", r.notRecovered).String())
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func jobsOr1(j int) int { return max(j, 1) }
