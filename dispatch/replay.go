package dispatch

import (
	"container/heap"
	"fmt"
	"sync"
	"time"
)

// DefaultReplayCapacity is a ReplayGuard's capacity when none is given.
const DefaultReplayCapacity = 100000

// ReplayGuard verifies notices and refuses one it has accepted before
// while it is inside the tolerance (after that, Verify refuses it as
// expired). It remembers each accepted notice's signature until its
// timestamp leaves the window, and at most capacity of them: when full of
// notices still inside the window it refuses new ones with
// ErrReplayGuardFull rather than forget one that could be replayed.
// Its methods are safe for concurrent use. One guard serves one receiver
// process; receivers behind a load balancer need a shared store of seen
// signatures instead (or the task's uuid, attempt and event as a key of
// their own).
type ReplayGuard struct {
	tolerance time.Duration
	capacity  int
	now       func() time.Time

	mu   sync.Mutex
	seen map[string]bool
	byAt expiryHeap
}

// NewReplayGuard returns a guard that accepts notices within tolerance of
// now (see Verify) and remembers up to capacity of them; capacity 0 means
// DefaultReplayCapacity.
func NewReplayGuard(tolerance time.Duration, capacity int) (*ReplayGuard, error) {
	if tolerance <= 0 {
		return nil, fmt.Errorf("%w: replay guard tolerance %s must be positive", ErrInvalid, tolerance)
	}
	if capacity < 0 {
		return nil, fmt.Errorf("%w: replay guard capacity %d is negative", ErrInvalid, capacity)
	}
	if capacity == 0 {
		capacity = DefaultReplayCapacity
	}
	return &ReplayGuard{tolerance: tolerance, capacity: capacity, now: time.Now, seen: map[string]bool{}}, nil
}

// Verify is the package's Verify with the guard's tolerance, and it
// refuses with ErrSignatureReplayed a notice it accepted before. A notice
// it refuses is not remembered.
func (g *ReplayGuard) Verify(secret, header string, body []byte) error {
	now := g.now()
	s, err := verifyAt(secret, header, body, g.tolerance, now)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.byAt) > 0 && now.Sub(g.byAt[0].at) > g.tolerance {
		delete(g.seen, heap.Pop(&g.byAt).(seenSig).mac)
	}
	if g.seen[s.mac] {
		return fmt.Errorf("%w: a notice signed at %s was accepted already", ErrSignatureReplayed, s.at.UTC().Format(time.RFC3339))
	}
	if len(g.seen) >= g.capacity {
		return fmt.Errorf("%w: %d notices inside the window of %s", ErrReplayGuardFull, len(g.seen), g.tolerance)
	}
	g.seen[s.mac] = true
	heap.Push(&g.byAt, seenSig{at: s.at, mac: s.mac})
	return nil
}

// Len is how many notices the guard remembers now.
func (g *ReplayGuard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen)
}

type seenSig struct {
	at  time.Time
	mac string
}

// expiryHeap orders remembered signatures by timestamp, oldest first.
type expiryHeap []seenSig

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(seenSig)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
