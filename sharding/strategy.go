package sharding

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Names of the built-in strategies. They match ElasticJob's
// jobShardingStrategyType values, except Scope which is specific to this
// package.
const (
	// AvgAllocation is the default strategy, ElasticJob's
	// AverageAllocationJobShardingStrategy. With n servers and t items,
	// server i first gets the t/n items [i*(t/n), (i+1)*(t/n)); then the
	// t%n leftover items (n*(t/n) .. t-1) go one each to servers 0, 1, 2, ...
	// in list order. 10 items over 3 servers: [0 1 2 9] [3 4 5] [6 7 8];
	// 8 over 3: [0 1 6] [2 3 7] [4 5]; 2 over 3: [0] [1] [].
	AvgAllocation = "AVG_ALLOCATION"

	// Odevity is ElasticJob's OdevitySortByNameJobShardingStrategy. It takes
	// the Java String.hashCode of the job name; if the hash is odd
	// (hash % 2 != 0 with Java's truncated remainder, so negative odd hashes
	// count as odd) the servers are used in the given order, otherwise in
	// reverse order, and AvgAllocation is applied to that order. Spreading
	// the "first" server between jobs this way balances load when many jobs
	// have fewer items than servers.
	Odevity = "ODEVITY"

	// RoundRobin is ElasticJob's RoundRobinByNameJobShardingStrategy
	// (formerly RotateServerByNameJobShardingStrategy). It computes
	// offset = Math.abs(hashCode(jobName)) % len(servers) with Java int
	// semantics, rotates the server list left by offset (servers[offset:]
	// followed by servers[:offset]) and applies AvgAllocation to the rotated
	// order.
	//
	// Java's Math.abs(Integer.MIN_VALUE) is Integer.MIN_VALUE itself, so for
	// a job name whose hashCode is Integer.MIN_VALUE (for example
	// "polygenelubricants") the offset is MIN_VALUE % n, which is zero when
	// n is a power of two and negative otherwise. ElasticJob then keeps the
	// list unrotated or throws IndexOutOfBoundsException respectively. This
	// package reproduces both outcomes: the unrotated assignment, or an
	// error wrapping ErrJobNameHashOverflow. Rename such a job or use another
	// strategy for it.
	RoundRobin = "ROUND_ROBIN"

	// Scope gives each server one contiguous range of items, in server list
	// order: every server gets totalCount/len(servers) items and the last
	// one also the remainder, so 2300 items over 3 servers are 0-765,
	// 766-1531 and 1532-2299; 10 over 3: [0 1 2] [3 4 5] [6 7 8 9]; 2 over
	// 3: [] [] [0 1]. It ignores the job name. Use it when neighbouring items
	// should be processed together (for example items that map to key
	// ranges), at the price of moving more items when servers join or leave.
	// Scope has no ElasticJob counterpart.
	Scope = "SCOPE"
)

// Strategy assigns sharding items 0..totalCount-1 to servers.
//
// Implementations must be pure and deterministic: the result may depend
// only on the arguments, never on time, randomness or state, because every
// server must be able to reproduce the leader's decision and a re-run must
// not move items around. They must not modify servers. The framework calls
// strategies through Assign, which validates the inputs and the result.
type Strategy interface {
	// Shard returns, for every server in servers, the ascending list of
	// items it owns. Every item in 0..totalCount-1 must be assigned to
	// exactly one server; servers without items map to an empty slice.
	Shard(jobName string, servers []string, totalCount int) (map[string][]int, error)
}

// StrategyFunc adapts an ordinary function to the Strategy interface.
type StrategyFunc func(jobName string, servers []string, totalCount int) (map[string][]int, error)

// Shard calls f(jobName, servers, totalCount).
func (f StrategyFunc) Shard(jobName string, servers []string, totalCount int) (map[string][]int, error) {
	return f(jobName, servers, totalCount)
}

var registry = struct {
	sync.RWMutex
	m map[string]Strategy
}{
	m: map[string]Strategy{
		AvgAllocation: StrategyFunc(shardAvgAllocation),
		Odevity:       StrategyFunc(shardOdevity),
		RoundRobin:    StrategyFunc(shardRoundRobin),
		Scope:         StrategyFunc(shardScope),
		Balanced:      StrategyFunc(shardBalanced),
		Idlest:        StrategyFunc(shardBalanced),
	},
}

// Register makes s available to Lookup under name. Names are
// case-sensitive. It is safe for concurrent use, typically called from an
// init function. It returns an error wrapping ErrInvalidStrategy for an
// empty name or a nil strategy, and one wrapping ErrDuplicateStrategy if
// the name is already registered; built-in strategies cannot be replaced.
func Register(name string, s Strategy) error {
	if name == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidStrategy)
	}
	if isNil(s) {
		return fmt.Errorf("%w: nil strategy for %q", ErrInvalidStrategy, name)
	}
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.m[name]; ok {
		return fmt.Errorf("%w: %q is already registered", ErrDuplicateStrategy, name)
	}
	registry.m[name] = s
	return nil
}

// Lookup returns the strategy registered under name. The empty name means
// [Balanced], the default. For an unknown name it returns an
// error wrapping ErrUnknownStrategy that names it and lists the known names.
func Lookup(name string) (Strategy, error) {
	if name == "" {
		name = Balanced
	}
	registry.RLock()
	s, ok := registry.m[name]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownStrategy, name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// Names returns the registered strategy names, built-in ones included,
// sorted ascending.
func Names() []string {
	registry.RLock()
	names := make([]string, 0, len(registry.m))
	for name := range registry.m {
		names = append(names, name)
	}
	registry.RUnlock()
	slices.Sort(names)
	return names
}

// isNil reports whether s is a nil interface or a nil StrategyFunc, either
// of which would panic when called.
func isNil(s Strategy) bool {
	if s == nil {
		return true
	}
	f, ok := s.(StrategyFunc)
	return ok && f == nil
}
