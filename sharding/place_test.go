package sharding

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// The table of seed 000 §4.2: five servers with fault tolerances 1, 1, 2,
// 3 and 4.
func TestCapsSeedTable(t *testing.T) {
	tolerance := map[string]int{"A": 1, "B": 1, "C": 2, "D": 3, "E": 4}
	for _, tt := range []struct {
		units int
		want  map[string]int
	}{
		{10, map[string]int{"A": 3, "B": 3, "C": 4, "D": 6, "E": 11}},
		{12, map[string]int{"A": 4, "B": 4, "C": 5, "D": 7, "E": 13}},
		{15, map[string]int{"A": 4, "B": 4, "C": 6, "D": 8, "E": 16}},
	} {
		if got := Caps(tt.units, tolerance); !maps.Equal(got, tt.want) {
			t.Errorf("K=%d: caps %v, want %v", tt.units, got, tt.want)
		}
	}
}

// While at most n servers are down (n of every survivor), the survivors'
// caps, computed before the failure, still hold every unit.
func TestCapsHoldEveryUnitWhileAtMostNAreDown(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		s := 1 + rng.IntN(7)
		units := rng.IntN(200)
		tol := map[string]int{}
		names := make([]string, s)
		for i := range s {
			names[i] = fmt.Sprintf("s%d", i)
			tol[names[i]] = 1 + rng.IntN(s)
		}
		caps := Caps(units, tol)
		for down := range 1 << s {
			var survivors []string
			downCount := 0
			for i, n := range names {
				if down&(1<<i) != 0 {
					downCount++
				} else {
					survivors = append(survivors, n)
				}
			}
			if len(survivors) == 0 {
				continue
			}
			tolerated := true
			sum := 0
			for _, n := range survivors {
				tolerated = tolerated && downCount <= tol[n]
				sum += caps[n]
			}
			if tolerated && sum < units {
				t.Fatalf("K=%d tolerances %v caps %v: %d down leave room for %d", units, tol, caps, downCount, sum)
			}
		}
	}
}

// namespace simulates a namespace's placement, job by job, as the
// reshards place them one after another.
type namespace struct {
	t      *testing.T
	joined map[string]int
	totals map[string]int
	assign map[string]map[string][]int // job -> server -> items
	moves  [][2]string                 // from, to: items that changed server
}

func newNamespace(t *testing.T) *namespace {
	return &namespace{t: t, joined: map[string]int{}, totals: map[string]int{}, assign: map[string]map[string][]int{}}
}

func (ns *namespace) load() map[string]int {
	out := map[string]int{}
	for _, a := range ns.assign {
		for s, items := range a {
			out[s] += len(items)
		}
	}
	return out
}

func (ns *namespace) place(job string, servers []string, caps map[string]int) []int {
	ns.t.Helper()
	before := ns.assign[job]
	res, err := Place(Input{Job: job, Total: ns.totals[job], Servers: servers, Current: before, Load: ns.load(), Cap: caps, Joined: ns.joined})
	if err != nil {
		ns.t.Fatal(err)
	}
	for s, items := range res.Assign {
		if _, ok := ns.joined[s]; !ok && len(items) > 0 {
			ns.joined[s] = len(ns.joined)
		}
	}
	owner := map[int]string{}
	for s, items := range before {
		for _, it := range items {
			owner[it] = s
		}
	}
	for s, items := range res.Assign {
		for _, it := range items {
			if o, ok := owner[it]; ok && o != s {
				ns.moves = append(ns.moves, [2]string{o, s})
			}
		}
	}
	ns.assign[job] = res.Assign
	return res.Unplaced
}

func (ns *namespace) placeAll(servers []string) {
	for _, job := range slices.Sorted(maps.Keys(ns.totals)) {
		ns.place(job, servers, nil)
	}
}

func spread(load map[string]int, servers []string) int {
	lo, hi := -1, 0
	for _, s := range servers {
		if lo < 0 || load[s] < lo {
			lo = load[s]
		}
		hi = max(hi, load[s])
	}
	return hi - lo
}

// The scenario, at the level of the placement function: 30
// one-item jobs on 3 servers, a fourth joins, one dies.
func TestPlaceSpreadsOneItemJobsAndStaysSticky(t *testing.T) {
	ns := newNamespace(t)
	for i := range 30 {
		ns.totals[fmt.Sprintf("job-%02d", i)] = 1
	}
	three := []string{"a", "b", "c"}
	ns.placeAll(three)
	if got := ns.load(); !maps.Equal(got, map[string]int{"a": 10, "b": 10, "c": 10}) {
		t.Fatalf("30 jobs on 3 servers: %v", got)
	}
	ns.moves = nil
	four := []string{"a", "b", "c", "d"}
	ns.placeAll(four)
	if got := ns.load(); spread(got, four) > 1 || got["d"] < 7 {
		t.Fatalf("after d joined: %v", got)
	}
	for _, m := range ns.moves {
		if m[1] != "d" {
			t.Fatalf("an item moved from %s to %s, between two old servers", m[0], m[1])
		}
	}
	// Placing again with nothing changed moves nothing.
	ns.moves = nil
	ns.placeAll(four)
	if len(ns.moves) != 0 {
		t.Fatalf("a second pass moved %v", ns.moves)
	}
	// b dies: only its items move, and the rest stay within one unit.
	ns.moves = nil
	rest := []string{"a", "c", "d"}
	ns.placeAll(rest)
	if got := ns.load(); spread(got, rest) > 1 || got["b"] != 0 {
		t.Fatalf("after b died: %v", got)
	}
	for _, m := range ns.moves {
		if m[0] != "b" {
			t.Fatalf("an item moved from %s to %s; only b's should move", m[0], m[1])
		}
	}
	// Jobs added and removed: still within one unit.
	for i := range 7 {
		ns.totals[fmt.Sprintf("new-%d", i)] = 1
	}
	ns.placeAll(rest)
	if got := ns.load(); spread(got, rest) > 1 {
		t.Fatalf("after 7 jobs were added: %v", got)
	}
}

// Random namespaces of jobs of any size: every job's items are placed
// once, each server gets ⌊T/S⌋ or ⌈T/S⌉ of a job, the namespace stays
// within one unit when placed from scratch, and a server never loses an
// item while it is at or under its share.
func TestPlaceInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 300 {
		ns := newNamespace(t)
		for i := range 1 + rng.IntN(40) {
			ns.totals[fmt.Sprintf("j%02d", i)] = 1 + rng.IntN(9)
		}
		pool := []string{"a", "b", "c", "d", "e", "f"}
		servers := slices.Clone(pool[:1+rng.IntN(len(pool))])
		ns.placeAll(servers)
		if got := ns.load(); spread(got, servers) > 1 {
			t.Fatalf("round %d: placed from scratch on %v: loads %v", round, servers, got)
		}
		// A server joins or leaves, then every job reshards.
		if len(servers) > 1 && rng.IntN(2) == 0 {
			i := rng.IntN(len(servers))
			servers = slices.Delete(servers, i, i+1)
		} else if len(servers) < len(pool) {
			servers = append(servers, pool[len(servers)])
		}
		slices.Sort(servers)
		for job, total := range ns.totals {
			before := ns.assign[job]
			res, err := Place(Input{Job: job, Total: total, Servers: servers, Current: before, Load: ns.load()})
			if err != nil {
				t.Fatal(err)
			}
			seen := make([]bool, total)
			q := total / len(servers)
			for _, s := range servers {
				items := res.Assign[s]
				if len(items) != q && len(items) != q+1 {
					t.Fatalf("round %d job %s (T=%d) on %v: %s got %d items", round, job, total, servers, s, len(items))
				}
				for _, it := range items {
					if seen[it] {
						t.Fatalf("item %d placed twice", it)
					}
					seen[it] = true
				}
				if len(before[s]) <= len(items) {
					for _, it := range before[s] {
						if !slices.Contains(items, it) {
							t.Fatalf("round %d job %s: %s lost item %d while under its share", round, job, s, it)
						}
					}
				}
			}
			if slices.Contains(seen, false) || len(res.Unplaced) != 0 {
				t.Fatalf("round %d job %s: items unplaced: %v", round, job, res.Unplaced)
			}
			ns.assign[job] = res.Assign
		}
	}
}

// With caps, no server goes above its cap and what fits nowhere is
// reported, never dropped; once capacity appears it is placed.
func TestPlaceRespectsCaps(t *testing.T) {
	ns := newNamespace(t)
	for i := range 12 {
		ns.totals[fmt.Sprintf("j%02d", i)] = 1
	}
	servers := []string{"a", "b"}
	caps := map[string]int{"a": 4, "b": 5}
	var unplaced []string
	for _, job := range slices.Sorted(maps.Keys(ns.totals)) {
		if u := ns.place(job, servers, caps); len(u) > 0 {
			unplaced = append(unplaced, job)
		}
	}
	load := ns.load()
	if load["a"] != 4 || load["b"] != 5 || len(unplaced) != 3 {
		t.Fatalf("loads %v, unplaced jobs %v; want a=4 b=5 and 3 unplaced", load, unplaced)
	}
	// A third server appears: the unplaced jobs go to it.
	servers = []string{"a", "b", "c"}
	caps["c"] = 5
	for _, job := range unplaced {
		if u := ns.place(job, servers, caps); len(u) > 0 {
			t.Fatalf("job %s still unplaced with room on c", job)
		}
	}
	if got := ns.load(); got["c"] != 3 {
		t.Fatalf("loads %v; want the 3 unplaced units on c", got)
	}
}

// IDLEST: items that have to be placed go to the server with the most free
// slots, one at a time; servers that did not answer get nothing new; items
// already placed stay.
func TestPlaceIdlest(t *testing.T) {
	res, err := Place(Input{
		Job: "j", Total: 6, Servers: []string{"a", "b", "c", "d"},
		Current: map[string][]int{"a": {0}, "gone": {1}},
		Free:    map[string]int{"a": 1, "b": 3, "c": 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int{"a": {0, 4}, "b": {1, 2, 5}, "c": {3}, "d": {}}
	for s, items := range want {
		if !slices.Equal(res.Assign[s], items) {
			t.Fatalf("got %v, want %v", res.Assign, want)
		}
	}
	if len(res.Unplaced) != 0 {
		t.Fatalf("unplaced %v", res.Unplaced)
	}
}

func TestPlaceRejectsBadInput(t *testing.T) {
	if _, err := Place(Input{Job: "j", Total: 0, Servers: []string{"a"}}); err == nil {
		t.Fatal("total 0 accepted")
	}
	if _, err := Place(Input{Job: "j", Total: 3, Servers: []string{"b", "a"}}); err == nil {
		t.Fatal("unsorted servers accepted")
	}
	res, err := Place(Input{Job: "j", Total: 3})
	if err != nil || !slices.Equal(res.Unplaced, []int{0, 1, 2}) {
		t.Fatalf("no servers: %v, %v; want every item unplaced", res, err)
	}
}

// Whatever order the jobs reshard in after a server joins (in a cluster
// they reshard at their own fires, in batches), items move only to the
// newcomer and the namespace ends within one unit.
func TestPlaceJoinMovesOnlyToTheNewcomerInAnyOrder(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 3))
		ns := newNamespace(t)
		var jobs []string
		for i := range 30 {
			name := fmt.Sprintf("job-%02d", i)
			ns.totals[name] = 1
			jobs = append(jobs, name)
		}
		ns.placeAll([]string{"a", "b", "c"})
		ns.moves = nil
		four := []string{"a", "b", "c", "d"}
		rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
		for _, job := range jobs {
			ns.place(job, four, nil)
		}
		for _, m := range ns.moves {
			if m[1] != "d" {
				t.Fatalf("seed %d: an item moved from %s to %s, between two old servers", seed, m[0], m[1])
			}
		}
		if got := ns.load(); spread(got, four) > 1 {
			t.Fatalf("seed %d: loads %v", seed, got)
		}
	}
}
