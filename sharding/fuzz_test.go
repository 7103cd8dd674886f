package sharding

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// FuzzAssign checks the assignment invariants of every built-in strategy
// for arbitrary job names, server counts and item counts, and compares the
// ElasticJob strategies with a per-item model of their definition.
func FuzzAssign(f *testing.F) {
	for _, job := range []string{"test_job", "0", "1", "2", "3", "script_job", "dataflow_job", "作业", "job😀", "", "polygenelubricants", "\xff\xfe"} {
		for _, c := range [][2]uint16{{0, 3}, {1, 3}, {3, 2}, {3, 8}, {3, 10}, {7, 20}, {8, 5}, {3, 0}, {64, 1000}} {
			f.Add(job, uint8(c[0]), c[1])
		}
	}
	f.Fuzz(func(t *testing.T, job string, nServers uint8, items uint16) {
		n := int(nServers) % 65
		total := int(items) % 2001
		servers := make([]string, n)
		for i := range servers {
			servers[i] = fmt.Sprintf("srv-%03d", i)
		}
		hash := javaStringHashCode(job)
		for _, name := range []string{AvgAllocation, Odevity, RoundRobin, Scope} {
			s, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Assign(s, job, servers, total)
			switch {
			case total == 0:
				if !errors.Is(err, ErrInvalidTotalCount) {
					t.Fatalf("%s: total 0: got %v, %v", name, got, err)
				}
				continue
			case n == 0:
				if err != nil || got == nil || len(got) != 0 {
					t.Fatalf("%s: no servers: got %v, %v", name, got, err)
				}
				continue
			case name == RoundRobin && javaAbs(hash) < 0 && n&(n-1) != 0:
				if !errors.Is(err, ErrJobNameHashOverflow) {
					t.Fatalf("%s: MIN_VALUE hash over %d servers: got %v, %v", name, n, got, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s(%q, %d servers, %d items): %v", name, job, n, total, err)
			}
			checkInvariants(t, name, got, servers, total)

			again, err := Assign(s, job, servers, total)
			if err != nil || !equalAssignment(got, again) {
				t.Fatalf("%s: not deterministic: %v then %v (%v)", name, got, again, err)
			}

			if name == Scope {
				checkScope(t, got, servers, total)
				continue
			}
			order := slices.Clone(servers)
			switch name {
			case Odevity:
				if hash%2 == 0 {
					slices.Reverse(order)
				}
			case RoundRobin:
				off := int(int64(javaAbs(hash)) % int64(n)) // non-negative here
				order = slices.Concat(order[off:], order[:off])
			}
			per := total / n
			for srv, list := range got {
				for _, item := range list {
					var want string
					if item < n*per {
						want = order[item/per]
					} else {
						want = order[item-n*per]
					}
					if srv != want {
						t.Fatalf("%s(%q, %d servers, %d items): item %d on %s, model says %s", name, job, n, total, item, srv, want)
					}
				}
			}
		}
	})
}

// checkInvariants re-checks, independently of Assign, what every built-in
// guarantees: each listed server present, items sorted, each item exactly
// once, and load sizes differing by at most one.
func checkInvariants(t *testing.T, name string, got map[string][]int, servers []string, total int) {
	t.Helper()
	if len(got) != len(servers) {
		t.Fatalf("%s: %d servers in result, want %d", name, len(got), len(servers))
	}
	seen := make([]bool, total)
	lo, hi := total, 0
	for _, srv := range servers {
		list, ok := got[srv]
		if !ok || list == nil {
			t.Fatalf("%s: server %s missing or nil", name, srv)
		}
		if !slices.IsSorted(list) {
			t.Fatalf("%s: %s items unsorted: %v", name, srv, list)
		}
		for _, item := range list {
			if item < 0 || item >= total || seen[item] {
				t.Fatalf("%s: bad or repeated item %d on %s", name, item, srv)
			}
			seen[item] = true
		}
		lo, hi = min(lo, len(list)), max(hi, len(list))
	}
	if i := slices.Index(seen, false); i >= 0 {
		t.Fatalf("%s: item %d unassigned", name, i)
	}
	if hi-lo > 1 && name != Scope {
		t.Fatalf("%s: unbalanced: sizes from %d to %d", name, lo, hi)
	}
}

// checkScope verifies SCOPE's contract: consecutive ranges in server order,
// total/n items each and the remainder on the last.
func checkScope(t *testing.T, got map[string][]int, servers []string, total int) {
	t.Helper()
	next, per := 0, total/len(servers)
	for i, srv := range servers {
		list := got[srv]
		if want := per + (total-per*len(servers))*b2i(i == len(servers)-1); len(list) != want {
			t.Fatalf("SCOPE: %s has %d items, want %d", srv, len(list), want)
		}
		for _, item := range list {
			if item != next {
				t.Fatalf("SCOPE: %s items %v not contiguous from %d", srv, list, next)
			}
			next++
		}
	}
}
