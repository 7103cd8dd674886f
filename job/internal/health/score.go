package health

import (
	"context"
	"log/slog"
	"math"
	"time"
)

// Sample is one reading of the machine's load, each share from 0 to 1:
// package job's LoadSample, field for field.
type Sample struct {
	// IdleCPU is the share of CPU time that was idle since the last sample.
	IdleCPU float64
	// FreeMemory is the share of memory available.
	FreeMemory float64
}

// Score weights: CPU 64%, free executor slots 32%, memory 4%.
const (
	scoreCPU    = 0.64
	scoreSlots  = 0.32
	scoreMemory = 0.04
)

// Score is the load score from 0 (busy) to 100 (idle), two decimals: 64%
// on the idle CPU share, 32% on the free share of the executor slots
// (none free when freeSlots is negative, all when slots is not positive),
// 4% on the free memory share, each share clamped to [0, 1], divided by
// the score of a fully idle node.
func Score(s Sample, freeSlots, slots int) float64 {
	clamp := func(x float64) float64 { return math.Max(0, math.Min(1, x)) }
	free := 1.0
	if slots > 0 {
		free = float64(max(freeSlots, 0)) / float64(slots)
	}
	v := scoreCPU*clamp(s.IdleCPU) + scoreSlots*clamp(free) + scoreMemory*clamp(s.FreeMemory)
	return math.Round(v/(scoreCPU+scoreSlots+scoreMemory)*10000) / 100
}

// preemptDelay is how long a candidate with score waits before taking
// namespace-wide work: (100 − score) × 10 ms, at most a second.
func preemptDelay(score float64) time.Duration {
	d := time.Duration((100 - score) * float64(10*time.Millisecond))
	return min(max(d, 0), time.Second)
}

// PreemptWait waits the preemption delay of an instance whose load score
// is score — (100 − score) × 10 ms, at most a second — so that the idlest
// candidate usually takes namespace-wide work first. It reports false if
// ctx ended first.
func PreemptWait(ctx context.Context, score float64) bool {
	t := time.NewTimer(preemptDelay(score))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Scores is the score loop of an instance: it samples the load every
// interval and publishes the score when it moved by a point or more.
type Scores struct {
	// Every is the interval between samples.
	Every time.Duration
	// Slots is how many executor slots the instance has.
	Slots int
	// Sample reads the machine's load.
	Sample func() (Sample, error)
	// Running counts the items running on the instance now.
	Running func() int
	// Publish records score, with the free slots, as the instance's and
	// writes its node, by ctx's deadline.
	Publish func(ctx context.Context, score float64, free int) error
	// Timeout is each publication's deadline.
	Timeout time.Duration
	// Log takes the failed samples and publications.
	Log *slog.Logger
}

// Run samples and publishes at once and then every interval, until ctx
// ends. A publication that fails is tried again at the next sample,
// whatever the score then.
func (sc Scores) Run(ctx context.Context) {
	tick := time.NewTicker(sc.Every)
	defer tick.Stop()
	var last *float64
	for {
		sample, err := sc.Sample()
		if err != nil {
			sc.Log.Warn("sampling the load", "err", err)
		} else {
			running := sc.Running()
			score := Score(sample, sc.Slots-running, sc.Slots)
			if last == nil || math.Abs(*last-score) >= 1 {
				pctx, cancel := context.WithTimeout(ctx, sc.Timeout)
				if err := sc.Publish(pctx, score, max(sc.Slots-running, 0)); err != nil && ctx.Err() == nil {
					sc.Log.Warn("publishing the load score", "err", err)
				} else {
					last = &score
				}
				cancel()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
