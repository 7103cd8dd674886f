package sharding

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// runID makes the names registered by a test unique per run, so that the
// global registry does not break go test -count=N.
var runID atomic.Int64

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s_%d", prefix, runID.Add(1))
}

func TestAvgAllocation(t *testing.T) {
	tests := []struct {
		n, total int
		want     [][]int
	}{
		{1, 1, [][]int{{0}}},
		{1, 5, [][]int{{0, 1, 2, 3, 4}}},
		{3, 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		{3, 8, [][]int{{0, 1, 6}, {2, 3, 7}, {4, 5}}},
		{3, 2, [][]int{{0}, {1}, {}}},
		{3, 3, [][]int{{0}, {1}, {2}}},
		{4, 6, [][]int{{0, 4}, {1, 5}, {2}, {3}}},
		{5, 1, [][]int{{0}, {}, {}, {}, {}}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%d", tt.n, tt.total), func(t *testing.T) {
			servers, want := positional(tt.n, tt.want)
			got, err := Assign(StrategyFunc(shardAvgAllocation), "any_job", servers, tt.total)
			if err != nil {
				t.Fatal(err)
			}
			if !equalAssignment(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestOdevityParity(t *testing.T) {
	servers := []string{"a", "b", "c"}
	asc := map[string][]int{"a": {0, 1, 6}, "b": {2, 3, 7}, "c": {4, 5}}
	desc := map[string][]int{"c": {0, 1, 6}, "b": {2, 3, 7}, "a": {4, 5}}
	tests := []struct {
		job  string
		hash int32
		want map[string][]int
	}{
		{"orderJob", 1234284943, asc},               // positive odd
		{"script_job", -841531831, asc},             // negative odd: Java's -1 != 0
		{"test_job", -1146456432, desc},             // negative even
		{"0", 48, desc},                             // positive even
		{"", 0, desc},                               // zero is even
		{"polygenelubricants", math.MinInt32, desc}, // Integer.MIN_VALUE is even
	}
	for _, tt := range tests {
		if h := javaStringHashCode(tt.job); h != tt.hash {
			t.Fatalf("hash(%q) = %d, want %d", tt.job, h, tt.hash)
		}
		got, err := Assign(StrategyFunc(shardOdevity), tt.job, servers, 8)
		if err != nil {
			t.Fatal(err)
		}
		if !equalAssignment(got, tt.want) {
			t.Errorf("%q: got %v, want %v", tt.job, got, tt.want)
		}
	}
}

func TestRoundRobinMinValueHash(t *testing.T) {
	const job = "polygenelubricants" // String.hashCode() == Integer.MIN_VALUE
	for n := 1; n <= 17; n++ {
		servers, _ := positional(n, nil)
		got, err := shardRoundRobin(job, servers, 2*n+1)
		powerOfTwo := n&(n-1) == 0
		if !powerOfTwo {
			if !errors.Is(err, ErrJobNameHashOverflow) {
				t.Errorf("n=%d: got %v, %v; want ErrJobNameHashOverflow", n, got, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		// MIN_VALUE % 2^k == 0: the list is not rotated.
		want := averageAllocation(servers, 2*n+1)
		if !equalAssignment(got, want) {
			t.Errorf("n=%d: got %v, want %v", n, got, want)
		}
	}
}

func TestScope(t *testing.T) {
	tests := []struct {
		n, total int
		want     [][]int
	}{
		{1, 4, [][]int{{0, 1, 2, 3}}},
		{3, 10, [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7, 8, 9}}},
		{3, 9, [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}}},
		{3, 8, [][]int{{0, 1}, {2, 3}, {4, 5, 6, 7}}},
		{3, 2, [][]int{{}, {}, {0, 1}}},
		{4, 10, [][]int{{0, 1}, {2, 3}, {4, 5}, {6, 7, 8, 9}}},
		{5, 1, [][]int{{}, {}, {}, {}, {0}}},
	}
	s, err := Lookup(Scope)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%d", tt.n, tt.total), func(t *testing.T) {
			servers, want := positional(tt.n, tt.want)
			// The job name must not matter.
			for _, job := range []string{"0", "1", "test_job"} {
				got, err := Assign(s, job, servers, tt.total)
				if err != nil {
					t.Fatal(err)
				}
				if !equalAssignment(got, want) {
					t.Errorf("job %q: got %v, want %v", job, got, want)
				}
			}
		})
	}
}

// TestBuiltinsDirect calls the built-in strategies without Assign: they
// validate their own input, handle zero servers and never modify servers.
func TestBuiltinsDirect(t *testing.T) {
	for _, name := range []string{AvgAllocation, Odevity, RoundRobin, Scope} {
		t.Run(name, func(t *testing.T) {
			s, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Shard("test_job", nil, 3)
			if err != nil || got == nil || len(got) != 0 {
				t.Errorf("zero servers: got %v, %v; want empty map", got, err)
			}
			if _, err := s.Shard("test_job", []string{"a"}, 0); !errors.Is(err, ErrInvalidTotalCount) {
				t.Errorf("total 0: got %v, want ErrInvalidTotalCount", err)
			}
			if _, err := s.Shard("test_job", []string{"a", "a"}, 2); !errors.Is(err, ErrInvalidServers) {
				t.Errorf("duplicate server: got %v, want ErrInvalidServers", err)
			}
			servers := []string{"a", "b", "c", "d"}
			for _, job := range []string{"0", "1", "2", "3", "test_job"} {
				if _, err := s.Shard(job, servers, 7); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(servers, []string{"a", "b", "c", "d"}) {
				t.Errorf("servers modified: %v", servers)
			}
		})
	}
}

func TestAssignInvalidInput(t *testing.T) {
	called := false
	spy := StrategyFunc(func(string, []string, int) (map[string][]int, error) {
		called = true
		return map[string][]int{}, nil
	})
	tests := []struct {
		name    string
		s       Strategy
		servers []string
		total   int
		want    error
	}{
		{"nil strategy", nil, []string{"a"}, 1, ErrInvalidStrategy},
		{"nil StrategyFunc", StrategyFunc(nil), []string{"a"}, 1, ErrInvalidStrategy},
		{"zero total", spy, []string{"a"}, 0, ErrInvalidTotalCount},
		{"negative total", spy, []string{"a"}, -3, ErrInvalidTotalCount},
		{"zero total no servers", spy, nil, 0, ErrInvalidTotalCount},
		{"total above Java int", spy, []string{"a"}, math.MaxInt32 + 1, ErrInvalidTotalCount},
		{"empty server id", spy, []string{"a", ""}, 2, ErrInvalidServers},
		{"duplicate server id", spy, []string{"a", "b", "a"}, 2, ErrInvalidServers},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called = false
			got, err := Assign(tt.s, "job", tt.servers, tt.total)
			if !errors.Is(err, tt.want) || got != nil {
				t.Errorf("got %v, %v; want error wrapping %v", got, err, tt.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "sharding: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if called {
				t.Error("strategy called despite invalid input")
			}
		})
	}
}

func TestAssignZeroServers(t *testing.T) {
	called := false
	spy := StrategyFunc(func(string, []string, int) (map[string][]int, error) {
		called = true
		return nil, errors.New("must not be called")
	})
	for _, servers := range [][]string{nil, {}} {
		got, err := Assign(spy, "job", servers, 5)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("servers %#v: got %#v, %v; want empty map, nil", servers, got, err)
		}
	}
	if called {
		t.Error("strategy called with zero servers")
	}
}

func TestAssignStrategyError(t *testing.T) {
	boom := errors.New("boom")
	s := StrategyFunc(func(string, []string, int) (map[string][]int, error) { return nil, boom })
	_, err := Assign(s, "my_job", []string{"a"}, 1)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `"my_job"`) {
		t.Errorf("got %v; want wrapped boom naming the job", err)
	}
}

func TestAssignBadAssignment(t *testing.T) {
	servers := []string{"a", "b", "c"}
	tests := []struct {
		name   string
		result map[string][]int
		want   []string // substrings of the error message
	}{
		{"missing item", map[string][]int{"a": {0}, "b": {1}, "c": {}}, []string{"items unassigned: [2]"}},
		{"item on two servers", map[string][]int{"a": {0, 1}, "b": {1, 2}, "c": {}}, []string{`item 1 assigned more than once (servers "a" and "b")`}},
		{"item twice on one server", map[string][]int{"a": {0, 0, 1}, "b": {2}, "c": {}}, []string{`item 0 assigned more than once (servers "a" and "a")`}},
		{"item out of range", map[string][]int{"a": {0, 1, 3}, "b": {2}, "c": {}}, []string{`server "a" got item 3 outside 0..2`}},
		{"negative item", map[string][]int{"a": {-1, 0, 1}, "b": {2}, "c": {}}, []string{`server "a" got item -1 outside 0..2`}},
		{"unsorted", map[string][]int{"a": {1, 0}, "b": {2}, "c": {}}, []string{`items of server "a" not sorted ascending: [1 0]`}},
		{"unlisted server", map[string][]int{"a": {0}, "b": {1}, "c": {}, "x": {2}}, []string{`unlisted server "x"`, "items unassigned: [2]"}},
		{"missing server", map[string][]int{"a": {0, 1}, "b": {2}}, []string{`server "c" missing from result`}},
		{"nil map", nil, []string{`server "a" missing`, "items unassigned: [0 1 2]"}},
		{"many problems", map[string][]int{"u": nil, "v": nil, "w": nil, "x": nil, "y": nil, "z": nil}, []string{"and 5 more"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := StrategyFunc(func(string, []string, int) (map[string][]int, error) { return tt.result, nil })
			got, err := Assign(s, "job", servers, 3)
			if !errors.Is(err, ErrBadAssignment) || got != nil {
				t.Fatalf("got %v, %v; want ErrBadAssignment", got, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestAssignReturnsCopy(t *testing.T) {
	var kept map[string][]int
	s := StrategyFunc(func(_ string, servers []string, _ int) (map[string][]int, error) {
		servers[0] = "mutated" // must not leak into the caller's slice
		kept = map[string][]int{"a": {0, 1}, "b": nil}
		return kept, nil
	})
	servers := []string{"a", "b"}
	got, err := Assign(s, "job", servers, 2)
	if err != nil {
		t.Fatal(err)
	}
	if servers[0] != "a" {
		t.Errorf("caller's servers modified: %v", servers)
	}
	if got["b"] == nil || len(got["b"]) != 0 {
		t.Errorf("nil slice not normalized: %#v", got["b"])
	}
	kept["a"][0] = 99
	if got["a"][0] != 0 {
		t.Errorf("result shares memory with the strategy's map: %v", got)
	}
}

func TestAssignDeterministic(t *testing.T) {
	servers := []string{"10.0.0.1@-@100", "10.0.0.2@-@200", "10.0.0.3@-@300"}
	for _, name := range []string{AvgAllocation, Odevity, RoundRobin, Scope} {
		s, _ := Lookup(name)
		first, err := Assign(s, "order-sync", servers, 11)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			again, err := Assign(s, "order-sync", servers, 11)
			if err != nil || !equalAssignment(first, again) {
				t.Fatalf("%s: not deterministic: %v vs %v (%v)", name, first, again, err)
			}
		}
	}
}

func TestLookup(t *testing.T) {
	def, err := Lookup("")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Assign(def, "test_job", []string{"a", "b", "c"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	// Alone (no namespace in view), BALANCED hands out blocks in server
	// order, the extra item to the first server.
	if want := (map[string][]int{"a": {0, 1, 2, 3}, "b": {4, 5, 6}, "c": {7, 8, 9}}); !equalAssignment(got, want) {
		t.Errorf(`Lookup("") is not BALANCED: got %v`, got)
	}
	for _, name := range []string{AvgAllocation, Odevity, RoundRobin, Scope, Balanced, Idlest} {
		if s, err := Lookup(name); err != nil || s == nil {
			t.Errorf("Lookup(%q) = %v, %v", name, s, err)
		}
	}

	_, err = Lookup("avg_allocation")
	if !errors.Is(err, ErrUnknownStrategy) {
		t.Fatalf("got %v; want ErrUnknownStrategy (names are case-sensitive)", err)
	}
	for _, w := range []string{`"avg_allocation"`, AvgAllocation, Odevity, RoundRobin, Scope} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %s", err, w)
		}
	}
}

func TestRegister(t *testing.T) {
	s := StrategyFunc(shardAvgAllocation)
	tests := []struct {
		name     string
		strategy Strategy
		want     error
	}{
		{"", s, ErrInvalidStrategy},
		{"TEST_REGISTER_NIL", nil, ErrInvalidStrategy},
		{"TEST_REGISTER_NIL_FUNC", StrategyFunc(nil), ErrInvalidStrategy},
		{AvgAllocation, s, ErrDuplicateStrategy},
		{Odevity, s, ErrDuplicateStrategy},
		{RoundRobin, s, ErrDuplicateStrategy},
		{Scope, s, ErrDuplicateStrategy},
	}
	for _, tt := range tests {
		if err := Register(tt.name, tt.strategy); !errors.Is(err, tt.want) {
			t.Errorf("Register(%q) = %v, want %v", tt.name, err, tt.want)
		}
	}
	ok := uniqueName("TEST_REGISTER_OK")
	if err := Register(ok, s); err != nil {
		t.Fatal(err)
	}
	if err := Register(ok, s); !errors.Is(err, ErrDuplicateStrategy) || !strings.Contains(err.Error(), ok) {
		t.Errorf("second Register = %v, want ErrDuplicateStrategy naming it", err)
	}
	if _, err := Lookup(ok); err != nil {
		t.Error(err)
	}
	names := Names()
	if !slices.IsSorted(names) {
		t.Errorf("Names() not sorted: %v", names)
	}
	for _, w := range []string{AvgAllocation, Odevity, RoundRobin, Scope, ok} {
		if !slices.Contains(names, w) {
			t.Errorf("Names() = %v, missing %s", names, w)
		}
	}
	for _, bad := range []string{"", "TEST_REGISTER_NIL", "TEST_REGISTER_NIL_FUNC"} {
		if slices.Contains(names, bad) {
			t.Errorf("Names() contains rejected name %q", bad)
		}
	}
}

func TestRegistryConcurrent(t *testing.T) {
	const workers = 16
	shared := uniqueName("TEST_CONCURRENT_SHARED")
	names := make([]string, workers)
	for i := range names {
		names[i] = uniqueName("TEST_CONCURRENT")
	}
	var wg sync.WaitGroup
	var winners atomic.Int32
	errs := make(chan error, workers*3)
	for _, name := range names {
		wg.Go(func() {
			if err := Register(name, StrategyFunc(shardScope)); err != nil {
				errs <- err
			}
			// Everyone races for the same name: exactly one wins.
			switch err := Register(shared, StrategyFunc(shardScope)); {
			case err == nil:
				winners.Add(1)
			case !errors.Is(err, ErrDuplicateStrategy):
				errs <- err
			}
			if _, err := Lookup(name); err != nil {
				errs <- err
			}
			_ = Names()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if w := winners.Load(); w != 1 {
		t.Errorf("%d goroutines registered %s, want exactly 1", w, shared)
	}
	all := Names()
	for _, name := range append(names, shared) {
		if !slices.Contains(all, name) {
			t.Errorf("%s missing from Names()", name)
		}
	}
}
