package sharding

import (
	"fmt"
	"math"
	"unicode/utf16"
)

// checkInput validates the arguments every strategy receives. Assign runs
// it too; the built-in strategies repeat it so that calling their Shard
// method directly is just as safe.
func checkInput(servers []string, totalCount int) error {
	if totalCount <= 0 || totalCount > math.MaxInt32 {
		return fmt.Errorf("%w: %d (want 1..%d)", ErrInvalidTotalCount, totalCount, math.MaxInt32)
	}
	seen := make(map[string]int, len(servers))
	for i, s := range servers {
		if s == "" {
			return fmt.Errorf("%w: server %d has an empty id", ErrInvalidServers, i)
		}
		if j, dup := seen[s]; dup {
			return fmt.Errorf("%w: server %q listed twice (positions %d and %d)", ErrInvalidServers, s, j, i)
		}
		seen[s] = i
	}
	return nil
}

// averageAllocation is the AVG_ALLOCATION algorithm on an already ordered
// server list; len(order) must be positive.
func averageAllocation(order []string, totalCount int) map[string][]int {
	n := len(order)
	per, rest := totalCount/n, totalCount%n
	result := make(map[string][]int, n)
	for i, server := range order {
		size := per
		if i < rest {
			size++
		}
		items := make([]int, 0, size)
		for item := i * per; item < (i+1)*per; item++ {
			items = append(items, item)
		}
		if i < rest {
			items = append(items, n*per+i)
		}
		result[server] = items
	}
	return result
}

func shardAvgAllocation(_ string, servers []string, totalCount int) (map[string][]int, error) {
	if err := checkInput(servers, totalCount); err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return map[string][]int{}, nil
	}
	return averageAllocation(servers, totalCount), nil
}

func shardOdevity(jobName string, servers []string, totalCount int) (map[string][]int, error) {
	if err := checkInput(servers, totalCount); err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return map[string][]int{}, nil
	}
	order := servers
	if javaStringHashCode(jobName)%2 == 0 {
		order = make([]string, len(servers))
		for i, s := range servers {
			order[len(servers)-1-i] = s
		}
	}
	return averageAllocation(order, totalCount), nil
}

func shardRoundRobin(jobName string, servers []string, totalCount int) (map[string][]int, error) {
	if err := checkInput(servers, totalCount); err != nil {
		return nil, err
	}
	n := len(servers)
	if n == 0 {
		return map[string][]int{}, nil
	}
	hash := javaStringHashCode(jobName)
	// Java computes Math.abs(hash) % n on ints. The list size n is at most
	// math.MaxInt32 in Java, so doing the remainder in int64 gives the same
	// value, including the negative one for hash == math.MinInt32.
	offset := int64(javaAbs(hash)) % int64(n)
	if offset < 0 {
		return nil, fmt.Errorf("%w: ROUND_ROBIN cannot rotate %d servers for job %q (ElasticJob throws IndexOutOfBoundsException here); rename the job or choose another strategy",
			ErrJobNameHashOverflow, n, jobName)
	}
	order := make([]string, 0, n)
	order = append(order, servers[offset:]...)
	order = append(order, servers[:offset]...)
	return averageAllocation(order, totalCount), nil
}

func shardScope(_ string, servers []string, totalCount int) (map[string][]int, error) {
	if err := checkInput(servers, totalCount); err != nil {
		return nil, err
	}
	n := len(servers)
	result := make(map[string][]int, n)
	if n == 0 {
		return result, nil
	}
	per := totalCount / n
	start := 0
	for i, server := range servers {
		size := per
		if i == n-1 {
			size = totalCount - start
		}
		items := make([]int, size)
		for j := range items {
			items[j] = start + j
		}
		result[server] = items
		start += size
	}
	return result, nil
}

// javaStringHashCode returns Java's String.hashCode for s:
// h = 31*h + c over the UTF-16 code units of the string, in wrapping 32-bit
// arithmetic (Go's signed overflow wraps exactly like Java's). Runes above
// U+FFFF count as their two surrogates. s should be valid UTF-8; each
// invalid byte counts as U+FFFD, as Go decodes it.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r > 0xFFFF {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + hi
			h = 31*h + lo
			continue
		}
		h = 31*h + r
	}
	return h
}

// javaAbs is Java's Math.abs(int): like Go's negation it leaves
// math.MinInt32 unchanged, so the result is negative for that one input.
func javaAbs(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}
