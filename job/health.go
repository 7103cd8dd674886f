package job

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Load scores and health checks: an instance publishes how idle
// it is, the IDLEST placement and preemption use it, and an instance whose
// own health check keeps failing takes itself out of placement.

// LoadSample is one reading of the machine's load, each share from 0 to 1.
type LoadSample struct {
	// IdleCPU is the share of CPU time that was idle since the last sample.
	IdleCPU float64
	// FreeMemory is the share of memory available.
	FreeMemory float64
}

// LoadSampler reads the machine's load. Tests inject their own.
type LoadSampler func() (LoadSample, error)

// Score weights: CPU 64%, free executor slots 32%, memory 4%.
const (
	scoreCPU    = 0.64
	scoreSlots  = 0.32
	scoreMemory = 0.04
)

// LoadScore is the load score from 0 (busy) to 100 (idle), two decimals:
// 64% on the idle CPU share, 32% on the free share of the executor slots,
// 4% on the free memory share, divided by the score of a fully idle node.
func LoadScore(s LoadSample, freeSlots, slots int) float64 {
	clamp := func(x float64) float64 { return math.Max(0, math.Min(1, x)) }
	free := 1.0
	if slots > 0 {
		free = float64(max(freeSlots, 0)) / float64(slots)
	}
	v := scoreCPU*clamp(s.IdleCPU) + scoreSlots*clamp(free) + scoreMemory*clamp(s.FreeMemory)
	return math.Round(v/(scoreCPU+scoreSlots+scoreMemory)*10000) / 100
}

// WithLoadScore makes the instance publish its load score every interval
// (at least a second), sampled by sampler (nil: the machine's, from
// /proc/stat and /proc/meminfo), with slots executor slots: the items it
// is sized to run at once (the free ones are slots minus the items
// running; slots is not a limit). The score is written to the instance's
// node only when it moved by a point or more. It feeds the IDLEST
// placement and preemption: failover claims wait (100 − score) × 10 ms,
// at most a second, so that the idlest instance usually takes them.
func WithLoadScore(interval time.Duration, slots int, sampler LoadSampler) Option {
	return func(o *options) error {
		if interval < time.Second && interval != 0 {
			return fmt.Errorf("%w: load score interval %v is under a second", ErrInvalidOption, interval)
		}
		if slots < 1 {
			return fmt.Errorf("%w: %d executor slots; want at least 1", ErrInvalidOption, slots)
		}
		if interval == 0 {
			interval = 10 * time.Second
		}
		if sampler == nil {
			sampler = newProcSampler().sample
		}
		o.scoreEvery, o.slots, o.sampler = interval, slots, sampler
		return nil
	}
}

// HealthFailures is how many failed checks in a row mark an instance
// offline.
const HealthFailures = 3

// WithHealthCheck runs check every interval (at least 100 ms), beyond
// ZooKeeper's session: after HealthFailures failures in a row the
// instance marks itself offline (layout.Offline): it takes no units, the
// leaders move its units away, and EventOffline is raised; one passing
// check marks it online again and resets the count (EventOnline). Each
// check gets a deadline of interval. Items running when it goes offline
// finish; none runs twice, since moving an item waits for its running
// mark.
func WithHealthCheck(interval time.Duration, check func(context.Context) error) Option {
	return func(o *options) error {
		if interval < 100*time.Millisecond {
			return fmt.Errorf("%w: health check interval %v is under 100ms", ErrInvalidOption, interval)
		}
		if check == nil {
			return fmt.Errorf("%w: nil health check", ErrInvalidOption)
		}
		o.healthEvery, o.health = interval, check
		return nil
	}
}

// startHealth starts the score and health loops the options ask for.
func (s *Scheduler) startHealth() {
	if s.opts.sampler != nil {
		s.spawn(s.scoreLoop)
	}
	if s.opts.health != nil {
		s.spawn(s.healthLoop)
	}
	if s.opts.probeEvery > 0 {
		s.spawn(s.probeLoop)
	}
}

func (s *Scheduler) scoreLoop() {
	tick := time.NewTicker(s.opts.scoreEvery)
	defer tick.Stop()
	var last *float64
	for {
		sample, err := s.opts.sampler()
		if err != nil {
			s.log.Warn("sampling the load", "err", err)
		} else {
			running := s.runningItems()
			score := LoadScore(sample, s.opts.slots-running, s.opts.slots)
			if last == nil || math.Abs(*last-score) >= 1 {
				s.inst.setScore(score, s.opts.slots, max(s.opts.slots-running, 0))
				ctx, cancel := context.WithTimeout(s.ctx, s.opts.reshardTimeout)
				if err := s.publishInstance(ctx); err != nil && s.ctx.Err() == nil {
					s.log.Warn("publishing the load score", "err", err)
				} else {
					last = &score
				}
				cancel()
			}
		}
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Score returns the load score this instance last published, and false
// before the first sample or when scores are off.
func (s *Scheduler) Score() (float64, bool) {
	return s.inst.lastScore()
}

// preemptDelay is how long a candidate with score waits before taking
// namespace-wide work: (100 − score) × 10 ms, at most a second.
func preemptDelay(score float64) time.Duration {
	d := time.Duration((100 - score) * float64(10*time.Millisecond))
	return min(max(d, 0), time.Second)
}

// preemptWait waits this instance's preemption delay; false if ctx ended.
// Without load scores it does not wait.
func (s *Scheduler) preemptWait(ctx context.Context) bool {
	score, ok := s.Score()
	if !ok {
		return true
	}
	t := time.NewTimer(preemptDelay(score))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Scheduler) healthLoop() {
	tick := time.NewTicker(s.opts.healthEvery)
	defer tick.Stop()
	failures := 0
	offline := false
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.opts.healthEvery)
		err := s.opts.health(ctx)
		cancel()
		if s.ctx.Err() != nil {
			return
		}
		if err == nil {
			failures = 0
			if offline {
				if s.markOffline(false) == nil {
					offline = false
					s.log.Info("health check passes again: the instance is online")
					s.emit(Event{Kind: EventOnline})
				}
			}
			continue
		}
		failures++
		s.log.Warn("health check failed", "failures", failures, "err", err)
		if failures >= HealthFailures && !offline {
			if merr := s.markOffline(true); merr != nil {
				s.log.Warn("marking the instance offline", "err", merr)
				continue
			}
			offline = true
			s.log.Warn("health check failed 3 times in a row: the instance is offline and hands its units over", "err", err)
			s.emit(Event{Kind: EventOffline, Err: err})
		}
	}
}

// markOffline writes or removes this instance's offline mark.
func (s *Scheduler) markOffline(off bool) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.reshardTimeout)
	defer cancel()
	p := layout.OfflineEntry(s.opts.serverID)
	if !off {
		if err := s.rc.Delete(ctx, p, -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
			return err
		}
		return nil
	}
	if err := s.rc.EnsurePath(ctx, layout.Offline); err != nil {
		return err
	}
	if _, err := s.rc.Create(ctx, p, nil, regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return err
	}
	return nil
}

// procSampler samples /proc/stat and /proc/meminfo.
type procSampler struct {
	mu              sync.Mutex
	lastIdle, lastT uint64
}

func newProcSampler() *procSampler { return &procSampler{} }

func (p *procSampler) sample() (LoadSample, error) {
	idle, total, err := readCPU()
	if err != nil {
		return LoadSample{}, err
	}
	mem, err := readMemAvailable()
	if err != nil {
		return LoadSample{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	share := 1.0
	if p.lastT != 0 && total > p.lastT {
		share = float64(idle-p.lastIdle) / float64(total-p.lastT)
	} else if total > 0 {
		share = float64(idle) / float64(total)
	}
	p.lastIdle, p.lastT = idle, total
	return LoadSample{IdleCPU: share, FreeMemory: mem}, nil
}

// readCPU returns the idle and total jiffies of /proc/stat's cpu line.
func readCPU() (idle, total uint64, err error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || fields[0] != "cpu" {
			continue
		}
		for i, v := range fields[1:] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("/proc/stat: %w", err)
			}
			total += n
			if i == 3 || i == 4 { // idle, iowait
				idle += n
			}
		}
		return idle, total, nil
	}
	return 0, 0, errors.New("/proc/stat: no cpu line")
}

// readMemAvailable returns MemAvailable/MemTotal from /proc/meminfo.
func readMemAvailable() (float64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	var total, avail float64
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "MemTotal:":
			total = v
		case "MemAvailable:":
			avail = v
		}
	}
	if total <= 0 {
		return 0, errors.New("/proc/meminfo: no MemTotal")
	}
	return avail / total, nil
}
