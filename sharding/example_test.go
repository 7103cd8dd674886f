package sharding_test

import (
	"errors"
	"fmt"

	"github.com/shardjob/shardjob/sharding"
)

func ExampleAssign() {
	s, err := sharding.Lookup(sharding.AvgAllocation)
	if err != nil {
		panic(err)
	}
	servers := []string{"host0", "host1", "host2"}
	assignment, err := sharding.Assign(s, "test_job", servers, 10)
	if err != nil {
		panic(err)
	}
	for _, server := range servers {
		fmt.Println(server, assignment[server])
	}
	// Output:
	// host0 [0 1 2 9]
	// host1 [3 4 5]
	// host2 [6 7 8]
}

func ExampleRegister() {
	// MODULO deals items out like cards: item i goes to server i % n.
	modulo := sharding.StrategyFunc(func(_ string, servers []string, totalCount int) (map[string][]int, error) {
		result := make(map[string][]int, len(servers))
		for _, server := range servers {
			result[server] = []int{}
		}
		for item := range totalCount {
			server := servers[item%len(servers)]
			result[server] = append(result[server], item)
		}
		return result, nil
	})
	// Normally done once, from an init function. Registering a name twice
	// fails with ErrDuplicateStrategy.
	if err := sharding.Register("MODULO", modulo); err != nil && !errors.Is(err, sharding.ErrDuplicateStrategy) {
		panic(err)
	}

	s, err := sharding.Lookup("MODULO")
	if err != nil {
		panic(err)
	}
	servers := []string{"a", "b", "c"}
	assignment, err := sharding.Assign(s, "billing", servers, 7)
	if err != nil {
		panic(err)
	}
	for _, server := range servers {
		fmt.Println(server, assignment[server])
	}
	// Output:
	// a [0 3 6]
	// b [1 4]
	// c [2 5]
}

func ExampleLookup() {
	_, err := sharding.Lookup("AVERAGE")
	fmt.Println(errors.Is(err, sharding.ErrUnknownStrategy))
	// Output:
	// true
}

// ROUND_ROBIN rotates the server list by abs(hashCode(jobName)) % n before
// allocating: "1".hashCode() is 49 and 49 % 3 == 1, so host1 comes first.
func Example_roundRobin() {
	s, _ := sharding.Lookup(sharding.RoundRobin)
	servers := []string{"host0", "host1", "host2"}
	assignment, _ := sharding.Assign(s, "1", servers, 2)
	for _, server := range servers {
		fmt.Println(server, assignment[server])
	}
	// Output:
	// host0 []
	// host1 [0]
	// host2 [1]
}

// SCOPE gives every server one contiguous range; the last takes the
// remainder.
func Example_scope() {
	s, _ := sharding.Lookup(sharding.Scope)
	servers := []string{"host0", "host1", "host2"}
	assignment, _ := sharding.Assign(s, "test_job", servers, 10)
	for _, server := range servers {
		fmt.Println(server, assignment[server])
	}
	// Output:
	// host0 [0 1 2]
	// host1 [3 4 5]
	// host2 [6 7 8 9]
}

// Place puts a job's extra item on the least loaded server of the
// namespace: here c, which holds fewer units of other jobs.
func ExamplePlace() {
	res, _ := sharding.Place(sharding.Input{
		Job: "report", Total: 4, Servers: []string{"a", "b", "c"},
		Load: map[string]int{"a": 10, "b": 10, "c": 9},
	})
	fmt.Println(res.Assign["a"], res.Assign["b"], res.Assign["c"], res.Unplaced)
	// Output:
	// [0] [1] [2 3] []
}

// Caps are seed 000's N = 1 + K/max(S−n, 1): with 10 units and five
// servers of fault tolerance 1, 1, 2, 3 and 4.
func ExampleCaps() {
	caps := sharding.Caps(10, map[string]int{"A": 1, "B": 1, "C": 2, "D": 3, "E": 4})
	fmt.Println(caps["A"], caps["B"], caps["C"], caps["D"], caps["E"])
	// Output:
	// 3 3 4 6 11
}
