package sharding

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Balanced ("BALANCED") is the namespace-wide placement, the default. It
// gives each server ⌊T/S⌋ or ⌈T/S⌉ of a job's T items, as AVG_ALLOCATION
// does, but the servers that get the extra item are the least loaded across
// the namespace, and items stay where they are unless moving them evens the
// load out. It needs more than a [Strategy] sees, so it is computed by
// [Place], not looked up; [Lookup] knows its name so that configs can say
// it.
const Balanced = "BALANCED"

// Idlest ("IDLEST") is the load-aware placement: a server keeps the items
// it holds, and every item that has to be placed goes to the server with the
// most free executor slots, one at a time (see Input.Free). Servers that do
// not publish a load score are skipped.
const Idlest = "IDLEST"

// shardBalanced is Balanced seen as a plain Strategy: a job alone, with
// nothing placed yet.
func shardBalanced(job string, servers []string, totalCount int) (map[string][]int, error) {
	sorted := slices.Clone(servers)
	slices.Sort(sorted)
	res, err := Place(Input{Job: job, Total: totalCount, Servers: sorted})
	if err != nil {
		return nil, err
	}
	return res.Assign, nil
}

// Input is what [Place] sees of a job and of its namespace.
type Input struct {
	// Job is the job's name, for error messages.
	Job string
	// Total is the job's item count T.
	Total int
	// Servers are the servers that may take items, sorted ascending.
	Servers []string
	// Current is the job's assignment now, by server; servers not in
	// Servers (gone, drained, offline) lose their items.
	Current map[string][]int
	// Load is the number of units (items of any job) each server holds
	// across the namespace, this job's Current included.
	Load map[string]int
	// Cap is the most units a server may hold across the namespace
	// ([Caps]); a server missing from Cap has no cap.
	Cap map[string]int
	// Joined orders the servers by when they first held units: a larger
	// value joined later, and a server missing from it is the newest.
	// Among servers equally loaded, the newer takes an extra item first,
	// so that while a newcomer fills up, items move to it rather than
	// between two servers that were there before.
	Joined map[string]int
	// Namespace lists every server of the namespace that may take units
	// (this job's servers or not), and Units is K, every unit of the
	// namespace counting this job at Total. Together they give each
	// server's fair share, ⌊K/S⌋ or ⌈K/S⌉: a server keeps the extra item
	// it holds while it is within its share, so that when a server joins,
	// the others give it units only down to their share and never to one
	// another. Nil Namespace means Servers; zero Units means the sum of
	// Load with this job at Total.
	Namespace []string
	Units     int
	// Free, when not nil, turns on load-aware placement: each item that
	// has to be placed (new, or its server is gone) goes to the server
	// with the most free executor slots, one at a time, each placement
	// taking one slot; servers keep the items they hold. A server missing
	// from Free is not considered for new items (it did not answer).
	Free map[string]int
}

// Result is a placement.
type Result struct {
	// Assign holds every server of Input.Servers, with its items sorted
	// ascending (empty when it gets none).
	Assign map[string][]int
	// Unplaced are the items no server may take (caps, or no servers),
	// ascending. They are placed as soon as capacity appears.
	Unplaced []int
}

// Place computes a job's assignment with the namespace in view. It is a
// pure function of its input; see [Balanced] for what it guarantees:
//
//   - without caps every item is placed and every server gets ⌊T/S⌋ or
//     ⌈T/S⌉ items;
//   - the extra items (T mod S of them) go to the servers with the fewest
//     units outside this job, ties kept by the servers that hold them now,
//     then given to the servers that joined last;
//   - a server keeps as many of its current items as its share allows, so
//     an item moves only from a server over its share, or from a server
//     that may no longer take items;
//   - no server ends above its cap; items that fit nowhere are Unplaced.
func Place(in Input) (Result, error) {
	if err := checkInput(in.Servers, in.Total); err != nil {
		return Result{}, fmt.Errorf("sharding: job %q: %w", in.Job, err)
	}
	if !slices.IsSorted(in.Servers) {
		return Result{}, fmt.Errorf("%w: job %q: servers not sorted ascending", ErrInvalidServers, in.Job)
	}
	eligible := make(map[string]bool, len(in.Servers))
	for _, s := range in.Servers {
		eligible[s] = true
	}
	// What each eligible server holds now (valid, not held twice), and
	// its load outside this job.
	cur := make(map[string][]int, len(in.Servers))
	held := make([]bool, in.Total)
	base := make(map[string]int, len(in.Servers))
	for _, s := range in.Servers {
		items := slices.Clone(in.Current[s])
		slices.Sort(items)
		kept := items[:0]
		for _, it := range items {
			if it >= 0 && it < in.Total && !held[it] {
				held[it] = true
				kept = append(kept, it)
			}
		}
		cur[s] = kept
		base[s] = max(in.Load[s]-len(in.Current[s]), 0)
	}
	if in.Free != nil {
		return placeByFree(in, cur), nil
	}
	target := shares(in, cur, base)
	return fill(in, cur, target), nil
}

// shares decides how many items each server gets.
func shares(in Input, cur map[string][]int, base map[string]int) map[string]int {
	target := make(map[string]int, len(in.Servers))
	n := len(in.Servers)
	if n == 0 {
		return target
	}
	q, r := in.Total/n, in.Total%n
	keeps := fairKeepers(in, cur, base)
	order := slices.Clone(in.Servers)
	joined := func(s string) int {
		if j, ok := in.Joined[s]; ok {
			return j
		}
		return math.MaxInt
	}
	slices.SortStableFunc(order, func(a, b string) int {
		return cmp.Or(cmp.Compare(b2i(keeps[b]), b2i(keeps[a])), cmp.Compare(base[a], base[b]),
			cmp.Compare(len(cur[b]), len(cur[a])), cmp.Compare(joined(b), joined(a)), cmp.Compare(a, b))
	})
	for i, s := range order {
		target[s] = q
		if i < r {
			target[s]++
		}
	}
	if in.Cap == nil {
		return target
	}
	room := func(s string) int {
		c, ok := in.Cap[s]
		if !ok {
			return in.Total
		}
		return max(c-base[s], 0)
	}
	deficit := 0
	for _, s := range in.Servers {
		if rm := room(s); target[s] > rm {
			deficit += target[s] - rm
			target[s] = rm
		}
	}
	// Give what the caps took to the servers with room, least loaded first.
	for ; deficit > 0; deficit-- {
		best := ""
		for _, s := range in.Servers {
			if target[s] >= room(s) {
				continue
			}
			if best == "" || base[s]+target[s] < base[best]+target[best] ||
				(base[s]+target[s] == base[best]+target[best] && joined(s) > joined(best)) {
				best = s
			}
		}
		if best == "" {
			break
		}
		target[best]++
	}
	return target
}

// fairKeepers returns the servers that hold more than ⌊T/S⌋ of the job's
// items and are within their fair share of the namespace: they keep their
// extra item. A server is within its share at ⌊K/S⌋ units or fewer, or at
// ⌈K/S⌉ while no more servers than K mod S are there.
func fairKeepers(in Input, cur map[string][]int, base map[string]int) map[string]bool {
	ns := in.Namespace
	if ns == nil {
		ns = in.Servers
	}
	if len(ns) == 0 || len(in.Servers) == 0 {
		return nil
	}
	k := in.Units
	if k <= 0 {
		for _, n := range in.Load {
			k += n
		}
		for _, items := range in.Current {
			k -= len(items)
		}
		k += in.Total
	}
	load := func(s string) int {
		if items, ok := cur[s]; ok {
			return base[s] + len(items)
		}
		return in.Load[s] - len(in.Current[s])
	}
	floor, rest := k/len(ns), k%len(ns)
	atCeil := 0
	for _, s := range ns {
		if rest > 0 && load(s) >= floor+1 {
			atCeil++
		}
	}
	q := in.Total / len(in.Servers)
	out := map[string]bool{}
	for _, s := range in.Servers {
		if len(cur[s]) <= q {
			continue
		}
		l := load(s)
		if l <= floor || (rest > 0 && l == floor+1 && atCeil <= rest) {
			out[s] = true
		}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fill keeps each server's current items up to its share and hands the
// rest out in item order.
func fill(in Input, cur map[string][]int, target map[string]int) Result {
	assign := make(map[string][]int, len(in.Servers))
	taken := make([]bool, in.Total)
	for _, s := range in.Servers {
		keep := cur[s][:min(len(cur[s]), target[s])]
		assign[s] = slices.Clone(keep)
		for _, it := range keep {
			taken[it] = true
		}
	}
	next := 0
	for _, s := range in.Servers {
		for len(assign[s]) < target[s] {
			for taken[next] {
				next++
			}
			taken[next] = true
			assign[s] = append(assign[s], next)
		}
		slices.Sort(assign[s])
	}
	var unplaced []int
	for it, t := range taken {
		if !t {
			unplaced = append(unplaced, it)
		}
	}
	return Result{Assign: assign, Unplaced: unplaced}
}

// placeByFree keeps current items and gives every other item to the
// server with the most free slots, one at a time.
func placeByFree(in Input, cur map[string][]int) Result {
	assign := make(map[string][]int, len(in.Servers))
	taken := make([]bool, in.Total)
	free := make(map[string]int, len(in.Servers))
	room := make(map[string]int, len(in.Servers))
	for _, s := range in.Servers {
		assign[s] = slices.Clone(cur[s])
		for _, it := range cur[s] {
			taken[it] = true
		}
		free[s] = in.Free[s]
		room[s] = in.Total
		if c, ok := in.Cap[s]; ok {
			room[s] = max(c-in.Load[s]+len(in.Current[s])-len(cur[s]), 0)
		}
	}
	var unplaced []int
	for it := range in.Total {
		if taken[it] {
			continue
		}
		best := ""
		for _, s := range in.Servers {
			if _, answered := in.Free[s]; !answered || room[s] == 0 {
				continue
			}
			if best == "" || free[s] > free[best] {
				best = s
			}
		}
		if best == "" {
			unplaced = append(unplaced, it)
			continue
		}
		assign[best] = append(assign[best], it)
		free[best]--
		room[best]--
	}
	for _, s := range in.Servers {
		slices.Sort(assign[s])
	}
	return Result{Assign: assign, Unplaced: unplaced}
}

// Caps returns each server's cap N = 1 + K / max(S − n, 1) (integer
// division): K units in the namespace, S servers (the keys of tolerance)
// and n the server's fault tolerance (at least 1; smaller values count as
// 1). While at most n servers are down, the caps of the others add up to
// at least K.
func Caps(units int, tolerance map[string]int) map[string]int {
	s := len(tolerance)
	out := make(map[string]int, s)
	for srv, n := range tolerance {
		n = max(n, 1)
		out[srv] = 1 + units/max(s-n, 1)
	}
	return out
}
