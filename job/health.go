package job

import (
	"context"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/job/internal/health"
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

// LoadScore is the load score from 0 (busy) to 100 (idle), two decimals:
// 64% on the idle CPU share, 32% on the free share of the executor slots,
// 4% on the free memory share, divided by the score of a fully idle node.
func LoadScore(s LoadSample, freeSlots, slots int) float64 {
	return health.Score(health.Sample(s), freeSlots, slots)
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
			p := new(health.ProcSampler)
			sampler = func() (LoadSample, error) {
				s, err := p.Sample()
				return LoadSample(s), err
			}
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

// startHealth starts the score and health loops and the peer probes the
// options ask for (health.Loops), on the scheduler's goroutines.
func (s *Scheduler) startHealth() {
	o := s.opts
	l := health.Loops{RC: s.rc, Server: o.serverID, Timeout: o.reshardTimeout, Failures: HealthFailures, Log: s.log,
		ScoreEvery: o.scoreEvery, Slots: o.slots, Running: s.runningItems,
		Publish: func(ctx context.Context, score float64, free int) error {
			s.inst.SetScore(score, o.slots, free)
			return s.inst.Publish(ctx)
		},
		CheckEvery: o.healthEvery, Check: o.health,
		Offline:    func(err error) { s.emit(Event{Kind: EventOffline, Err: err}) },
		Online:     func() { s.emit(Event{Kind: EventOnline}) },
		ProbeEvery: o.probeEvery, Client: o.probeClient,
		PeerOffline: func(peer string, err error) { s.emit(Event{Kind: EventPeerOffline, Peer: peer, Err: err}) },
		PeerOnline:  func(peer string) { s.emit(Event{Kind: EventPeerOnline, Peer: peer}) },
	}
	if o.sampler != nil {
		l.Sample = func() (health.Sample, error) {
			ls, err := o.sampler()
			return health.Sample(ls), err
		}
	}
	l.Start(s.ctx, s.spawn)
}

// Score returns the load score this instance last published, and false
// before the first sample or when scores are off.
func (s *Scheduler) Score() (float64, bool) {
	return s.inst.LastScore()
}

// preemptWait waits this instance's preemption delay; false if ctx ended.
// Without load scores it does not wait.
func (s *Scheduler) preemptWait(ctx context.Context) bool {
	score, ok := s.Score()
	if !ok {
		return true
	}
	return health.PreemptWait(ctx, score)
}
