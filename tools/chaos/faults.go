package main

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/tools/chaos/eventlog"
)

// Fault kinds.
const (
	faultKill9        = "kill9"         // SIGKILL an instance, restart it a few seconds later
	faultStop         = "sigstop"       // freeze an instance past its session timeout, then SIGCONT
	faultTerm         = "sigterm"       // graceful shutdown of an instance, restart it later
	faultZKFollower   = "zk-follower"   // kill -9 a ZooKeeper follower, start it again later
	faultZKLeader     = "zk-leader"     // kill -9 the ZooKeeper leader, start it again later
	faultZKRestart    = "zk-restart"    // stop every member, start them all (no quorum meanwhile)
	faultEtcdFollower = "etcd-follower" // kill -9 an etcd follower, start it again later
	faultEtcdLeader   = "etcd-leader"   // kill -9 the etcd leader, start it again later
	faultEtcdRestart  = "etcd-restart"  // stop every etcd member, start them all (no quorum meanwhile)
	faultEtcdWiped    = "etcd-wiped"    // kill -9 an etcd follower, wipe its data, and have it rejoin as a new member
	faultEtcdFrozen   = "etcd-frozen"   // SIGSTOP an etcd member past the lease: silent to clients and peers alike, its connections open
	faultPGKill       = "pg-kill"       // kill -9 the PostgreSQL server, start it again later (no registry meanwhile)
	faultPGRestart    = "pg-restart"    // stop the PostgreSQL server (fast shutdown), start it again
	faultPGFrozen     = "pg-frozen"     // SIGSTOP the PostgreSQL server past the lease, its connections open
	faultPartition    = "partition"     // cut the namespaced instance off past its session timeout
)

// instanceFaults act on the instances, whatever the registry.
var instanceFaults = []string{faultKill9, faultStop, faultTerm, faultPartition}

// registryFaults are each registry's own faults, acting on its members.
var registryFaults = map[string][]string{
	registryZooKeeper: {faultZKFollower, faultZKLeader, faultZKRestart},
	registryEtcd:      {faultEtcdFollower, faultEtcdLeader, faultEtcdRestart, faultEtcdWiped, faultEtcdFrozen},
	registryPostgres:  {faultPGKill, faultPGRestart, faultPGFrozen},
}

// faultsFor returns every fault kind a run on registry injects by default.
func faultsFor(registry string) []string {
	return append(slices.Clone(instanceFaults), registryFaults[registry]...)
}

// isFault reports whether f is a fault kind of runs on registry.
func isFault(registry, f string) bool     { return slices.Contains(faultsFor(registry), f) }
func hasFault(fs []string, f string) bool { return slices.Contains(fs, f) }

// isMemberFault reports whether f acts on the registry's members (after it
// every instance's session went through the fault).
func isMemberFault(f string) bool {
	for _, fs := range registryFaults {
		if slices.Contains(fs, f) {
			return true
		}
	}
	return false
}

// minRoom is the least time left before the deadline for another fault
// after the first round.
const minRoom = 10 * time.Second

// faultLoop injects faults, one at a time, each followed by a recovery: a
// first round of every enabled kind in random order (always completed, so
// every kind happens at least once), then random kinds until the duration
// is used up.
func (h *harness) faultLoop(ctx context.Context) error {
	var kinds []string
	for _, f := range h.cfg.Faults {
		if f == faultPartition && h.netns == nil {
			continue
		}
		kinds = append(kinds, f)
	}
	if len(kinds) == 0 {
		h.progress("no fault enabled")
		return sleepCtx(ctx, h.cfg.Duration)
	}
	deadline := time.Now().Add(h.cfg.Duration)
	first := slices.Clone(kinds)
	h.rng.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
	if err := sleepCtx(ctx, h.cfg.Warmup); err != nil {
		return err
	}
	for n := 0; ; n++ {
		var kind string
		if n < len(first) {
			kind = first[n]
		} else {
			if time.Until(deadline) < minRoom {
				break
			}
			kind = kinds[h.rng.IntN(len(kinds))]
		}
		if err := sleepCtx(ctx, h.between(1500*time.Millisecond, 3*time.Second)); err != nil {
			return err
		}
		if err := h.inject(ctx, kind); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			h.note("fault %s failed: %v", kind, err)
		}
		if isMemberFault(kind) {
			// Every instance's session went through the fault: let those
			// abandoned meanwhile expire before judging the recovery.
			if err := sleepCtx(ctx, h.cfg.SessionTimeout); err != nil {
				return err
			}
		}
		for attempt := 1; ; attempt++ {
			rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			t0 := time.Now()
			err := h.waitRecovered(rctx)
			cancel()
			if err == nil {
				h.progress("recovered in %v", time.Since(t0).Round(time.Millisecond))
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			h.note("cluster not recovered after %s (attempt %d): %v", kind, attempt, err)
			h.dump(fmt.Sprintf("%s-tree-unrecovered-%d.txt", shortName(h.cfg.Registry), n))
			if attempt == 3 {
				return fmt.Errorf("cluster did not recover after %s: %w", kind, err)
			}
		}
	}
	if left := time.Until(deadline); left > 0 {
		return sleepCtx(ctx, left)
	}
	return nil
}

// between returns a random duration in [lo, hi).
func (h *harness) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(h.rng.Int64N(int64(hi-lo)))
}

// other returns a random member other than i.
func (h *harness) other(i int) int {
	var others []int
	for j := range ensemble {
		if j != i {
			others = append(others, j)
		}
	}
	return others[h.rng.IntN(len(others))]
}

// pick returns a random running, unfrozen instance.
func (h *harness) pick() (*instance, error) {
	var ps []*instance
	for _, p := range h.procs {
		if _, _, _, frozen := p.state(); p.alive() && !frozen {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("no running instance")
	}
	return ps[h.rng.IntN(len(ps))], nil
}

// span logs a fault's beginning and returns the function that logs its end.
func (h *harness) span(kind, detail, inst string) func() {
	t0 := time.Now()
	h.event(eventlog.Event{Ev: eventlog.FaultBegin, Fault: kind, Detail: detail, Inst: inst})
	h.progress("fault %s %s: begin", kind, detail)
	return func() {
		h.event(eventlog.Event{Ev: eventlog.FaultEnd, Fault: kind, Detail: detail, Inst: inst})
		h.progress("fault %s %s: end after %v", kind, detail, time.Since(t0).Round(time.Millisecond))
	}
}

func (h *harness) inject(ctx context.Context, kind string) error {
	st := h.cfg.SessionTimeout
	switch kind {
	case faultKill9:
		p, err := h.pick()
		if err != nil {
			return err
		}
		end := h.span(kind, p.id, p.id)
		defer end()
		h.kill(p)
		if err := sleepCtx(ctx, h.between(2*time.Second, 4*time.Second)); err != nil {
			return err
		}
		return h.start(p)

	case faultStop:
		p, err := h.pick()
		if err != nil {
			return err
		}
		end := h.span(kind, p.id, p.id)
		defer end()
		if err := h.signal(p, syscall.SIGSTOP); err != nil {
			return err
		}
		// SIGCONT comes whatever happens: a run cancelled meanwhile must not
		// leave a frozen process (the cleanup kills it anyway).
		defer func() { _ = h.signal(p, syscall.SIGCONT) }()
		return sleepCtx(ctx, st+h.between(time.Second, 3*time.Second))

	case faultTerm:
		p, err := h.pick()
		if err != nil {
			return err
		}
		end := h.span(kind, p.id, p.id)
		defer end()
		h.terminate(p)
		if err := sleepCtx(ctx, h.between(time.Second, 3*time.Second)); err != nil {
			return err
		}
		return h.start(p)

	case faultZKFollower, faultZKLeader, faultEtcdFollower, faultEtcdLeader:
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		leader, err := h.cluster.leader(lctx)
		cancel()
		if err != nil {
			return fmt.Errorf("finding the leader: %w", err)
		}
		isLeader := kind == faultZKLeader || kind == faultEtcdLeader
		target := leader
		if !isLeader {
			target = h.other(leader)
		}
		end := h.span(kind, fmt.Sprintf("member %d", target), "")
		defer end()
		t0 := time.Now()
		if err := h.cluster.kill(target); err != nil {
			return err
		}
		h.memberMu.Lock()
		h.memberDown[target] = true
		h.memberMu.Unlock()
		if isLeader {
			lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			nl, err := h.cluster.leader(lctx)
			cancel()
			if err != nil {
				h.note("no new leader after killing leader %d: %v", target, err)
			} else {
				h.note("member %d leads after %v", nl, time.Since(t0).Round(time.Millisecond))
			}
		}
		if err := sleepCtx(ctx, h.between(2*time.Second, 4*time.Second)); err != nil {
			return err
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		return h.startMember(sctx, target)

	case faultPGKill:
		// The one server: the registry is gone until it is back, as
		// while a ZooKeeper ensemble has no quorum.
		end := h.span(kind, "member 0", "")
		defer end()
		h.event(eventlog.Event{Ev: eventlog.NoQuorumBegin})
		defer h.event(eventlog.Event{Ev: eventlog.NoQuorumEnd})
		if err := h.cluster.kill(0); err != nil {
			return err
		}
		h.memberMu.Lock()
		h.memberDown[0] = true
		h.memberMu.Unlock()
		if err := sleepCtx(ctx, h.between(2*time.Second, 4*time.Second)); err != nil {
			return err
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		return h.startMember(sctx, 0)

	case faultPGFrozen:
		end := h.span(kind, "member 0", "")
		defer end()
		h.event(eventlog.Event{Ev: eventlog.NoQuorumBegin})
		defer h.event(eventlog.Event{Ev: eventlog.NoQuorumEnd})
		if err := h.cluster.pause(0); err != nil {
			return err
		}
		defer func() {
			if err := h.cluster.resume(0); err != nil {
				h.note("resuming the PostgreSQL server: %v", err)
			}
		}()
		return sleepCtx(ctx, st+h.between(time.Second, 3*time.Second))

	case faultZKRestart, faultEtcdRestart, faultPGRestart:
		end := h.span(kind, "all members", "")
		defer end()
		h.event(eventlog.Event{Ev: eventlog.NoQuorumBegin})
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := h.cluster.restartAll(rctx)
		cancel()
		h.event(eventlog.Event{Ev: eventlog.NoQuorumEnd})
		if err != nil {
			return fmt.Errorf("restarting the cluster: %w", err)
		}
		return nil

	case faultEtcdWiped:
		// A follower (losing the leader is etcd-leader's fault): the other
		// two keep the quorum and every committed write, and the wiped
		// member, removed and added again as a new one, catches up from
		// them.
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		leader, err := h.cluster.leader(lctx)
		cancel()
		if err != nil {
			return fmt.Errorf("finding the leader: %w", err)
		}
		target := h.other(leader)
		end := h.span(kind, fmt.Sprintf("member %d", target), "")
		defer end()
		t0 := time.Now()
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := h.cluster.restartWiped(wctx, target); err != nil {
			return fmt.Errorf("member %d wiped: %w", target, err)
		}
		h.note("member %d wiped, added again and serving after %v", target, time.Since(t0).Round(time.Millisecond))
		return nil

	case faultEtcdFrozen:
		// Any member, the leader included: a member cut off by the network
		// whose connections stay open, as its clients and its peers see it.
		// The clients must give up on it and go on through the others.
		target := h.rng.IntN(ensemble)
		end := h.span(kind, fmt.Sprintf("member %d", target), "")
		defer end()
		if err := h.cluster.pause(target); err != nil {
			return err
		}
		defer func() {
			if err := h.cluster.resume(target); err != nil {
				h.note("resuming member %d: %v", target, err)
			}
		}()
		return sleepCtx(ctx, st+h.between(time.Second, 3*time.Second))

	case faultPartition:
		var p *instance
		for _, q := range h.procs {
			if q.inNetns {
				p = q
			}
		}
		if p == nil || h.netns == nil {
			return fmt.Errorf("no instance in a network namespace")
		}
		end := h.span(kind, p.id, p.id)
		defer end()
		if err := h.netns.partition(ctx); err != nil {
			return err
		}
		defer func() {
			if err := h.netns.heal(context.Background()); err != nil {
				h.note("healing the partition: %v", err)
			}
		}()
		return sleepCtx(ctx, st+h.between(time.Second, 3*time.Second))
	}
	return fmt.Errorf("unknown fault %q", kind)
}
