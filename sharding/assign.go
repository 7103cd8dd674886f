package sharding

import (
	"fmt"
	"slices"
	"strings"
)

// maxProblems bounds how many problems a bad-assignment error lists.
const maxProblems = 5

// Assign shards totalCount items over servers with s and checks the result.
// The framework calls it with the servers sorted ascending; strategies see
// them in the order given.
//
// Inputs are validated first: a nil s gives an error wrapping
// ErrInvalidStrategy, a totalCount outside 1..math.MaxInt32 one wrapping
// ErrInvalidTotalCount, and an empty or duplicated server id one wrapping
// ErrInvalidServers. With zero servers Assign returns an empty map and a nil
// error without calling s. Errors returned by s are wrapped with the job
// name.
//
// The result is then verified: every item 0..totalCount-1 is assigned
// exactly once, only to listed servers; every listed server is present in
// the map; and each item list is sorted ascending. A result breaking any of
// these gives an error wrapping ErrBadAssignment that describes the
// problems. On success Assign returns a copy of the result, with an empty,
// non-nil slice for servers without items.
func Assign(s Strategy, jobName string, servers []string, totalCount int) (map[string][]int, error) {
	if isNil(s) {
		return nil, fmt.Errorf("%w: nil strategy", ErrInvalidStrategy)
	}
	if err := checkInput(servers, totalCount); err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return map[string][]int{}, nil
	}
	got, err := s.Shard(jobName, slices.Clone(servers), totalCount)
	if err != nil {
		return nil, fmt.Errorf("sharding: job %q: %w", jobName, err)
	}
	if problems := verify(got, servers, totalCount); len(problems) > 0 {
		if len(problems) > maxProblems {
			problems = append(problems[:maxProblems], fmt.Sprintf("and %d more", len(problems)-maxProblems))
		}
		return nil, fmt.Errorf("%w for job %q: %s", ErrBadAssignment, jobName, strings.Join(problems, "; "))
	}
	result := make(map[string][]int, len(servers))
	for _, server := range servers {
		items := got[server]
		if items == nil {
			items = []int{}
		}
		result[server] = slices.Clone(items)
	}
	return result, nil
}

// verify lists, in a deterministic order, everything wrong with got as an
// assignment of totalCount items to servers.
func verify(got map[string][]int, servers []string, totalCount int) []string {
	var problems []string
	listed := make(map[string]bool, len(servers))
	for _, server := range servers {
		listed[server] = true
	}
	var unknown []string
	for server := range got {
		if !listed[server] {
			unknown = append(unknown, server)
		}
	}
	slices.Sort(unknown)
	for _, server := range unknown {
		problems = append(problems, fmt.Sprintf("unlisted server %q in result", server))
	}

	owner := make([]int, totalCount) // index into servers plus one; 0 means unassigned
	for i, server := range servers {
		items, ok := got[server]
		if !ok {
			problems = append(problems, fmt.Sprintf("server %q missing from result", server))
			continue
		}
		if !slices.IsSorted(items) {
			problems = append(problems, fmt.Sprintf("items of server %q not sorted ascending: %v", server, items))
		}
		for _, item := range items {
			switch {
			case item < 0 || item >= totalCount:
				problems = append(problems, fmt.Sprintf("server %q got item %d outside 0..%d", server, item, totalCount-1))
			case owner[item] != 0:
				problems = append(problems, fmt.Sprintf("item %d assigned more than once (servers %q and %q)", item, servers[owner[item]-1], server))
			default:
				owner[item] = i + 1
			}
		}
	}
	var missing []int
	for item, o := range owner {
		if o == 0 {
			missing = append(missing, item)
		}
	}
	if len(missing) > 0 {
		const show = 10
		if len(missing) > show {
			problems = append(problems, fmt.Sprintf("%d items unassigned: %v ...", len(missing), missing[:show]))
		} else {
			problems = append(problems, fmt.Sprintf("items unassigned: %v", missing))
		}
	}
	return problems
}
