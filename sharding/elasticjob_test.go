package sharding

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// positional builds servers "s0".."s<n-1>" (sorted ascending for n <= 10)
// and turns a per-position expectation into a map.
func positional(n int, want [][]int) ([]string, map[string][]int) {
	servers := make([]string, n)
	for i := range servers {
		servers[i] = fmt.Sprintf("s%d", i)
	}
	if want == nil {
		return servers, nil
	}
	m := make(map[string][]int, n)
	for i, items := range want {
		m[servers[i]] = items
	}
	return servers, m
}

func equalAssignment(a, b map[string][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || !slices.Equal(va, vb) {
			return false
		}
	}
	return true
}

// TestJavaStringHashCode pins Java String.hashCode values, each checked
// against java.lang.String.hashCode on OpenJDK 17.
func TestJavaStringHashCode(t *testing.T) {
	tests := []struct {
		s    string
		want int32
	}{
		{"test_job", -1146456432},
		{"0", 48},
		{"1", 49},
		{"2", 50},
		{"3", 51},
		{"script_job", -841531831},
		{"dataflow_job", -1002558762},
		{"orderJob", 1234284943},
		{"作业", 649790},
		{"job😀", 103067104},
		{"", 0},
		{"polygenelubricants", -2147483648},
	}
	for _, tt := range tests {
		if got := javaStringHashCode(tt.s); got != tt.want {
			t.Errorf("javaStringHashCode(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

func TestJavaAbs(t *testing.T) {
	tests := []struct{ in, want int32 }{
		{0, 0},
		{5, 5},
		{-5, 5},
		{math.MaxInt32, math.MaxInt32},
		{-math.MaxInt32, math.MaxInt32},
		{math.MinInt32, math.MinInt32}, // Math.abs(Integer.MIN_VALUE) == Integer.MIN_VALUE
	}
	for _, tt := range tests {
		if got := javaAbs(tt.in); got != tt.want {
			t.Errorf("javaAbs(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestElasticJobUnitTestCases pins the cases published by ElasticJob's own
// unit tests (kernel/src/test/java/org/apache/shardingsphere/elasticjob/
// kernel/internal/sharding/strategy/type/ in apache/shardingsphere-elasticjob):
// AverageAllocationJobShardingStrategyTest,
// OdevitySortByNameJobShardingStrategyTest and
// RotateServerByNameJobShardingStrategyTest.
func TestElasticJobUnitTestCases(t *testing.T) {
	hosts := []string{"host0@-@0", "host1@-@0", "host2@-@0"}
	tests := []struct {
		test     string
		strategy string
		servers  []string
		job      string
		total    int
		want     map[string][]int
	}{
		{"AverageAllocation/shardingForZeroServer", AvgAllocation, nil, "test_job", 3, map[string][]int{}},
		{"AverageAllocation/shardingForOneServer", AvgAllocation, hosts[:1], "test_job", 3,
			map[string][]int{"host0@-@0": {0, 1, 2}}},
		{"AverageAllocation/shardingForServersMoreThanShardingCount", AvgAllocation, hosts, "test_job", 2,
			map[string][]int{"host0@-@0": {0}, "host1@-@0": {1}, "host2@-@0": {}}},
		{"AverageAllocation/shardingForServersLessThanShardingCountAliquot", AvgAllocation, hosts, "test_job", 9,
			map[string][]int{"host0@-@0": {0, 1, 2}, "host1@-@0": {3, 4, 5}, "host2@-@0": {6, 7, 8}}},
		{"AverageAllocation/shardingForServersLessThanShardingCountAliquantFor8ShardingCountAnd3Servers", AvgAllocation, hosts, "test_job", 8,
			map[string][]int{"host0@-@0": {0, 1, 6}, "host1@-@0": {2, 3, 7}, "host2@-@0": {4, 5}}},
		{"AverageAllocation/shardingForServersLessThanShardingCountAliquantFor10ShardingCountAnd3Servers", AvgAllocation, hosts, "test_job", 10,
			map[string][]int{"host0@-@0": {0, 1, 2, 9}, "host1@-@0": {3, 4, 5}, "host2@-@0": {6, 7, 8}}},
		// "1".hashCode() == 49 (odd): ascending.
		{"Odevity/assertShardingByAsc", Odevity, hosts, "1", 2,
			map[string][]int{"host0@-@0": {0}, "host1@-@0": {1}, "host2@-@0": {}}},
		// "0".hashCode() == 48 (even): descending.
		{"Odevity/assertShardingByDesc", Odevity, hosts, "0", 2,
			map[string][]int{"host2@-@0": {0}, "host1@-@0": {1}, "host0@-@0": {}}},
		// 49 % 3 == 1: host1, host2, host0.
		{"RotateServer/assertSharding1", RoundRobin, hosts, "1", 2,
			map[string][]int{"host1@-@0": {0}, "host2@-@0": {1}, "host0@-@0": {}}},
		// 50 % 3 == 2: host2, host0, host1.
		{"RotateServer/assertSharding2", RoundRobin, hosts, "2", 2,
			map[string][]int{"host2@-@0": {0}, "host0@-@0": {1}, "host1@-@0": {}}},
		// 51 % 3 == 0: no rotation.
		{"RotateServer/assertSharding3", RoundRobin, hosts, "3", 2,
			map[string][]int{"host0@-@0": {0}, "host1@-@0": {1}, "host2@-@0": {}}},
	}
	for _, tt := range tests {
		t.Run(tt.test, func(t *testing.T) {
			s, err := Lookup(tt.strategy)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Assign(s, tt.job, tt.servers, tt.total)
			if err != nil {
				t.Fatalf("Assign: %v", err)
			}
			if !equalAssignment(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestElasticJobResults pins results produced by running ElasticJob's
// AverageAllocationJobShardingStrategy, OdevitySortByNameJobShardingStrategy
// and RoundRobinByNameJobShardingStrategy (apache/shardingsphere-elasticjob
// at commit 89f70b70e11f527b10b1c55838cfa7ac070128f0) on servers s0..s<n-1>
// in that order. Each want row lists the items of s0, s1, ... in turn. A nil
// want marks the inputs where ElasticJob throws IndexOutOfBoundsException:
// ROUND_ROBIN with a job name hashing to Integer.MIN_VALUE
// ("polygenelubricants") over a server count that is not a power of two.
func TestElasticJobResults(t *testing.T) {
	tests := []struct {
		strategy string
		job      string
		n, total int
		want     [][]int
	}{
		{AvgAllocation, "test_job", 1, 3, [][]int{{0, 1, 2}}},
		{AvgAllocation, "test_job", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{AvgAllocation, "test_job", 3, 2, [][]int{{0}, {1}, {}}},
		{AvgAllocation, "test_job", 3, 8, [][]int{{0, 1, 6}, {2, 3, 7}, {4, 5}}},
		{AvgAllocation, "test_job", 3, 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		{AvgAllocation, "test_job", 4, 10, [][]int{{0, 1, 8}, {2, 3, 9}, {4, 5}, {6, 7}}},
		{AvgAllocation, "test_job", 5, 3, [][]int{{0}, {1}, {2}, {}, {}}},
		{AvgAllocation, "test_job", 7, 20, [][]int{{0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}, {10, 11, 19}, {12, 13}}},
		{AvgAllocation, "test_job", 8, 5, [][]int{{0}, {1}, {2}, {3}, {4}, {}, {}, {}}},
		{Odevity, "test_job", 1, 3, [][]int{{0, 1, 2}}},
		{Odevity, "test_job", 2, 7, [][]int{{3, 4, 5}, {0, 1, 2, 6}}},
		{Odevity, "test_job", 3, 2, [][]int{{}, {1}, {0}}},
		{Odevity, "test_job", 3, 8, [][]int{{4, 5}, {2, 3, 7}, {0, 1, 6}}},
		{Odevity, "test_job", 3, 10, [][]int{{6, 7, 8}, {3, 4, 5}, {0, 1, 2, 9}}},
		{Odevity, "test_job", 4, 10, [][]int{{6, 7}, {4, 5}, {2, 3, 9}, {0, 1, 8}}},
		{Odevity, "test_job", 5, 3, [][]int{{}, {}, {2}, {1}, {0}}},
		{Odevity, "test_job", 7, 20, [][]int{{12, 13}, {10, 11, 19}, {8, 9, 18}, {6, 7, 17}, {4, 5, 16}, {2, 3, 15}, {0, 1, 14}}},
		{Odevity, "test_job", 8, 5, [][]int{{}, {}, {}, {4}, {3}, {2}, {1}, {0}}},
		{Odevity, "0", 1, 3, [][]int{{0, 1, 2}}},
		{Odevity, "0", 2, 7, [][]int{{3, 4, 5}, {0, 1, 2, 6}}},
		{Odevity, "0", 3, 2, [][]int{{}, {1}, {0}}},
		{Odevity, "0", 3, 8, [][]int{{4, 5}, {2, 3, 7}, {0, 1, 6}}},
		{Odevity, "0", 3, 10, [][]int{{6, 7, 8}, {3, 4, 5}, {0, 1, 2, 9}}},
		{Odevity, "0", 4, 10, [][]int{{6, 7}, {4, 5}, {2, 3, 9}, {0, 1, 8}}},
		{Odevity, "0", 5, 3, [][]int{{}, {}, {2}, {1}, {0}}},
		{Odevity, "0", 7, 20, [][]int{{12, 13}, {10, 11, 19}, {8, 9, 18}, {6, 7, 17}, {4, 5, 16}, {2, 3, 15}, {0, 1, 14}}},
		{Odevity, "0", 8, 5, [][]int{{}, {}, {}, {4}, {3}, {2}, {1}, {0}}},
		{Odevity, "1", 1, 3, [][]int{{0, 1, 2}}},
		{Odevity, "1", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{Odevity, "1", 3, 2, [][]int{{0}, {1}, {}}},
		{Odevity, "1", 3, 8, [][]int{{0, 1, 6}, {2, 3, 7}, {4, 5}}},
		{Odevity, "1", 3, 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		{Odevity, "1", 4, 10, [][]int{{0, 1, 8}, {2, 3, 9}, {4, 5}, {6, 7}}},
		{Odevity, "1", 5, 3, [][]int{{0}, {1}, {2}, {}, {}}},
		{Odevity, "1", 7, 20, [][]int{{0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}, {10, 11, 19}, {12, 13}}},
		{Odevity, "1", 8, 5, [][]int{{0}, {1}, {2}, {3}, {4}, {}, {}, {}}},
		{Odevity, "2", 1, 3, [][]int{{0, 1, 2}}},
		{Odevity, "2", 2, 7, [][]int{{3, 4, 5}, {0, 1, 2, 6}}},
		{Odevity, "2", 3, 2, [][]int{{}, {1}, {0}}},
		{Odevity, "2", 3, 8, [][]int{{4, 5}, {2, 3, 7}, {0, 1, 6}}},
		{Odevity, "2", 3, 10, [][]int{{6, 7, 8}, {3, 4, 5}, {0, 1, 2, 9}}},
		{Odevity, "2", 4, 10, [][]int{{6, 7}, {4, 5}, {2, 3, 9}, {0, 1, 8}}},
		{Odevity, "2", 5, 3, [][]int{{}, {}, {2}, {1}, {0}}},
		{Odevity, "2", 7, 20, [][]int{{12, 13}, {10, 11, 19}, {8, 9, 18}, {6, 7, 17}, {4, 5, 16}, {2, 3, 15}, {0, 1, 14}}},
		{Odevity, "2", 8, 5, [][]int{{}, {}, {}, {4}, {3}, {2}, {1}, {0}}},
		{Odevity, "3", 1, 3, [][]int{{0, 1, 2}}},
		{Odevity, "3", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{Odevity, "3", 3, 2, [][]int{{0}, {1}, {}}},
		{Odevity, "3", 3, 8, [][]int{{0, 1, 6}, {2, 3, 7}, {4, 5}}},
		{Odevity, "3", 3, 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		{Odevity, "3", 4, 10, [][]int{{0, 1, 8}, {2, 3, 9}, {4, 5}, {6, 7}}},
		{Odevity, "3", 5, 3, [][]int{{0}, {1}, {2}, {}, {}}},
		{Odevity, "3", 7, 20, [][]int{{0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}, {10, 11, 19}, {12, 13}}},
		{Odevity, "3", 8, 5, [][]int{{0}, {1}, {2}, {3}, {4}, {}, {}, {}}},
		{Odevity, "script_job", 1, 3, [][]int{{0, 1, 2}}},
		{Odevity, "script_job", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{Odevity, "script_job", 3, 2, [][]int{{0}, {1}, {}}},
		{Odevity, "script_job", 3, 8, [][]int{{0, 1, 6}, {2, 3, 7}, {4, 5}}},
		{Odevity, "script_job", 3, 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		{Odevity, "script_job", 4, 10, [][]int{{0, 1, 8}, {2, 3, 9}, {4, 5}, {6, 7}}},
		{Odevity, "script_job", 5, 3, [][]int{{0}, {1}, {2}, {}, {}}},
		{Odevity, "script_job", 7, 20, [][]int{{0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}, {10, 11, 19}, {12, 13}}},
		{Odevity, "script_job", 8, 5, [][]int{{0}, {1}, {2}, {3}, {4}, {}, {}, {}}},
		{Odevity, "dataflow_job", 1, 3, [][]int{{0, 1, 2}}},
		{Odevity, "dataflow_job", 2, 7, [][]int{{3, 4, 5}, {0, 1, 2, 6}}},
		{Odevity, "dataflow_job", 3, 2, [][]int{{}, {1}, {0}}},
		{Odevity, "dataflow_job", 3, 8, [][]int{{4, 5}, {2, 3, 7}, {0, 1, 6}}},
		{Odevity, "dataflow_job", 3, 10, [][]int{{6, 7, 8}, {3, 4, 5}, {0, 1, 2, 9}}},
		{Odevity, "dataflow_job", 4, 10, [][]int{{6, 7}, {4, 5}, {2, 3, 9}, {0, 1, 8}}},
		{Odevity, "dataflow_job", 5, 3, [][]int{{}, {}, {2}, {1}, {0}}},
		{Odevity, "dataflow_job", 7, 20, [][]int{{12, 13}, {10, 11, 19}, {8, 9, 18}, {6, 7, 17}, {4, 5, 16}, {2, 3, 15}, {0, 1, 14}}},
		{Odevity, "dataflow_job", 8, 5, [][]int{{}, {}, {}, {4}, {3}, {2}, {1}, {0}}},
		{Odevity, "orderJob", 1, 3, [][]int{{0, 1, 2}}},
		{Odevity, "orderJob", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{Odevity, "orderJob", 3, 2, [][]int{{0}, {1}, {}}},
		{Odevity, "orderJob", 3, 8, [][]int{{0, 1, 6}, {2, 3, 7}, {4, 5}}},
		{Odevity, "orderJob", 3, 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		{Odevity, "orderJob", 4, 10, [][]int{{0, 1, 8}, {2, 3, 9}, {4, 5}, {6, 7}}},
		{Odevity, "orderJob", 5, 3, [][]int{{0}, {1}, {2}, {}, {}}},
		{Odevity, "orderJob", 7, 20, [][]int{{0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}, {10, 11, 19}, {12, 13}}},
		{Odevity, "orderJob", 8, 5, [][]int{{0}, {1}, {2}, {3}, {4}, {}, {}, {}}},
		{Odevity, "作业", 1, 3, [][]int{{0, 1, 2}}},
		{Odevity, "作业", 2, 7, [][]int{{3, 4, 5}, {0, 1, 2, 6}}},
		{Odevity, "作业", 3, 2, [][]int{{}, {1}, {0}}},
		{Odevity, "作业", 3, 8, [][]int{{4, 5}, {2, 3, 7}, {0, 1, 6}}},
		{Odevity, "作业", 3, 10, [][]int{{6, 7, 8}, {3, 4, 5}, {0, 1, 2, 9}}},
		{Odevity, "作业", 4, 10, [][]int{{6, 7}, {4, 5}, {2, 3, 9}, {0, 1, 8}}},
		{Odevity, "作业", 5, 3, [][]int{{}, {}, {2}, {1}, {0}}},
		{Odevity, "作业", 7, 20, [][]int{{12, 13}, {10, 11, 19}, {8, 9, 18}, {6, 7, 17}, {4, 5, 16}, {2, 3, 15}, {0, 1, 14}}},
		{Odevity, "作业", 8, 5, [][]int{{}, {}, {}, {4}, {3}, {2}, {1}, {0}}},
		{Odevity, "job😀", 1, 3, [][]int{{0, 1, 2}}},
		{Odevity, "job😀", 2, 7, [][]int{{3, 4, 5}, {0, 1, 2, 6}}},
		{Odevity, "job😀", 3, 2, [][]int{{}, {1}, {0}}},
		{Odevity, "job😀", 3, 8, [][]int{{4, 5}, {2, 3, 7}, {0, 1, 6}}},
		{Odevity, "job😀", 3, 10, [][]int{{6, 7, 8}, {3, 4, 5}, {0, 1, 2, 9}}},
		{Odevity, "job😀", 4, 10, [][]int{{6, 7}, {4, 5}, {2, 3, 9}, {0, 1, 8}}},
		{Odevity, "job😀", 5, 3, [][]int{{}, {}, {2}, {1}, {0}}},
		{Odevity, "job😀", 7, 20, [][]int{{12, 13}, {10, 11, 19}, {8, 9, 18}, {6, 7, 17}, {4, 5, 16}, {2, 3, 15}, {0, 1, 14}}},
		{Odevity, "job😀", 8, 5, [][]int{{}, {}, {}, {4}, {3}, {2}, {1}, {0}}},
		{Odevity, "", 1, 3, [][]int{{0, 1, 2}}},
		{Odevity, "", 2, 7, [][]int{{3, 4, 5}, {0, 1, 2, 6}}},
		{Odevity, "", 3, 2, [][]int{{}, {1}, {0}}},
		{Odevity, "", 3, 8, [][]int{{4, 5}, {2, 3, 7}, {0, 1, 6}}},
		{Odevity, "", 3, 10, [][]int{{6, 7, 8}, {3, 4, 5}, {0, 1, 2, 9}}},
		{Odevity, "", 4, 10, [][]int{{6, 7}, {4, 5}, {2, 3, 9}, {0, 1, 8}}},
		{Odevity, "", 5, 3, [][]int{{}, {}, {2}, {1}, {0}}},
		{Odevity, "", 7, 20, [][]int{{12, 13}, {10, 11, 19}, {8, 9, 18}, {6, 7, 17}, {4, 5, 16}, {2, 3, 15}, {0, 1, 14}}},
		{Odevity, "", 8, 5, [][]int{{}, {}, {}, {4}, {3}, {2}, {1}, {0}}},
		{Odevity, "polygenelubricants", 1, 3, [][]int{{0, 1, 2}}},
		{Odevity, "polygenelubricants", 2, 7, [][]int{{3, 4, 5}, {0, 1, 2, 6}}},
		{Odevity, "polygenelubricants", 3, 2, [][]int{{}, {1}, {0}}},
		{Odevity, "polygenelubricants", 3, 8, [][]int{{4, 5}, {2, 3, 7}, {0, 1, 6}}},
		{Odevity, "polygenelubricants", 3, 10, [][]int{{6, 7, 8}, {3, 4, 5}, {0, 1, 2, 9}}},
		{Odevity, "polygenelubricants", 4, 10, [][]int{{6, 7}, {4, 5}, {2, 3, 9}, {0, 1, 8}}},
		{Odevity, "polygenelubricants", 5, 3, [][]int{{}, {}, {2}, {1}, {0}}},
		{Odevity, "polygenelubricants", 7, 20, [][]int{{12, 13}, {10, 11, 19}, {8, 9, 18}, {6, 7, 17}, {4, 5, 16}, {2, 3, 15}, {0, 1, 14}}},
		{Odevity, "polygenelubricants", 8, 5, [][]int{{}, {}, {}, {4}, {3}, {2}, {1}, {0}}},
		{RoundRobin, "test_job", 1, 3, [][]int{{0, 1, 2}}},
		{RoundRobin, "test_job", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{RoundRobin, "test_job", 3, 2, [][]int{{0}, {1}, {}}},
		{RoundRobin, "test_job", 3, 8, [][]int{{0, 1, 6}, {2, 3, 7}, {4, 5}}},
		{RoundRobin, "test_job", 3, 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		{RoundRobin, "test_job", 4, 10, [][]int{{0, 1, 8}, {2, 3, 9}, {4, 5}, {6, 7}}},
		{RoundRobin, "test_job", 5, 3, [][]int{{}, {}, {0}, {1}, {2}}},
		{RoundRobin, "test_job", 7, 20, [][]int{{10, 11, 19}, {12, 13}, {0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}}},
		{RoundRobin, "test_job", 8, 5, [][]int{{0}, {1}, {2}, {3}, {4}, {}, {}, {}}},
		{RoundRobin, "0", 1, 3, [][]int{{0, 1, 2}}},
		{RoundRobin, "0", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{RoundRobin, "0", 3, 2, [][]int{{0}, {1}, {}}},
		{RoundRobin, "0", 3, 8, [][]int{{0, 1, 6}, {2, 3, 7}, {4, 5}}},
		{RoundRobin, "0", 3, 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		{RoundRobin, "0", 4, 10, [][]int{{0, 1, 8}, {2, 3, 9}, {4, 5}, {6, 7}}},
		{RoundRobin, "0", 5, 3, [][]int{{2}, {}, {}, {0}, {1}}},
		{RoundRobin, "0", 7, 20, [][]int{{2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}, {10, 11, 19}, {12, 13}, {0, 1, 14}}},
		{RoundRobin, "0", 8, 5, [][]int{{0}, {1}, {2}, {3}, {4}, {}, {}, {}}},
		{RoundRobin, "1", 1, 3, [][]int{{0, 1, 2}}},
		{RoundRobin, "1", 2, 7, [][]int{{3, 4, 5}, {0, 1, 2, 6}}},
		{RoundRobin, "1", 3, 2, [][]int{{}, {0}, {1}}},
		{RoundRobin, "1", 3, 8, [][]int{{4, 5}, {0, 1, 6}, {2, 3, 7}}},
		{RoundRobin, "1", 3, 10, [][]int{{6, 7, 8}, {0, 1, 2, 9}, {3, 4, 5}}},
		{RoundRobin, "1", 4, 10, [][]int{{6, 7}, {0, 1, 8}, {2, 3, 9}, {4, 5}}},
		{RoundRobin, "1", 5, 3, [][]int{{1}, {2}, {}, {}, {0}}},
		{RoundRobin, "1", 7, 20, [][]int{{0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}, {10, 11, 19}, {12, 13}}},
		{RoundRobin, "1", 8, 5, [][]int{{}, {0}, {1}, {2}, {3}, {4}, {}, {}}},
		{RoundRobin, "2", 1, 3, [][]int{{0, 1, 2}}},
		{RoundRobin, "2", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{RoundRobin, "2", 3, 2, [][]int{{1}, {}, {0}}},
		{RoundRobin, "2", 3, 8, [][]int{{2, 3, 7}, {4, 5}, {0, 1, 6}}},
		{RoundRobin, "2", 3, 10, [][]int{{3, 4, 5}, {6, 7, 8}, {0, 1, 2, 9}}},
		{RoundRobin, "2", 4, 10, [][]int{{4, 5}, {6, 7}, {0, 1, 8}, {2, 3, 9}}},
		{RoundRobin, "2", 5, 3, [][]int{{0}, {1}, {2}, {}, {}}},
		{RoundRobin, "2", 7, 20, [][]int{{12, 13}, {0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}, {10, 11, 19}}},
		{RoundRobin, "2", 8, 5, [][]int{{}, {}, {0}, {1}, {2}, {3}, {4}, {}}},
		{RoundRobin, "3", 1, 3, [][]int{{0, 1, 2}}},
		{RoundRobin, "3", 2, 7, [][]int{{3, 4, 5}, {0, 1, 2, 6}}},
		{RoundRobin, "3", 3, 2, [][]int{{0}, {1}, {}}},
		{RoundRobin, "3", 3, 8, [][]int{{0, 1, 6}, {2, 3, 7}, {4, 5}}},
		{RoundRobin, "3", 3, 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		{RoundRobin, "3", 4, 10, [][]int{{2, 3, 9}, {4, 5}, {6, 7}, {0, 1, 8}}},
		{RoundRobin, "3", 5, 3, [][]int{{}, {0}, {1}, {2}, {}}},
		{RoundRobin, "3", 7, 20, [][]int{{10, 11, 19}, {12, 13}, {0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}}},
		{RoundRobin, "3", 8, 5, [][]int{{}, {}, {}, {0}, {1}, {2}, {3}, {4}}},
		{RoundRobin, "script_job", 1, 3, [][]int{{0, 1, 2}}},
		{RoundRobin, "script_job", 2, 7, [][]int{{3, 4, 5}, {0, 1, 2, 6}}},
		{RoundRobin, "script_job", 3, 2, [][]int{{}, {0}, {1}}},
		{RoundRobin, "script_job", 3, 8, [][]int{{4, 5}, {0, 1, 6}, {2, 3, 7}}},
		{RoundRobin, "script_job", 3, 10, [][]int{{6, 7, 8}, {0, 1, 2, 9}, {3, 4, 5}}},
		{RoundRobin, "script_job", 4, 10, [][]int{{2, 3, 9}, {4, 5}, {6, 7}, {0, 1, 8}}},
		{RoundRobin, "script_job", 5, 3, [][]int{{}, {0}, {1}, {2}, {}}},
		{RoundRobin, "script_job", 7, 20, [][]int{{0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}, {10, 11, 19}, {12, 13}}},
		{RoundRobin, "script_job", 8, 5, [][]int{{1}, {2}, {3}, {4}, {}, {}, {}, {0}}},
		{RoundRobin, "dataflow_job", 1, 3, [][]int{{0, 1, 2}}},
		{RoundRobin, "dataflow_job", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{RoundRobin, "dataflow_job", 3, 2, [][]int{{0}, {1}, {}}},
		{RoundRobin, "dataflow_job", 3, 8, [][]int{{0, 1, 6}, {2, 3, 7}, {4, 5}}},
		{RoundRobin, "dataflow_job", 3, 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		{RoundRobin, "dataflow_job", 4, 10, [][]int{{4, 5}, {6, 7}, {0, 1, 8}, {2, 3, 9}}},
		{RoundRobin, "dataflow_job", 5, 3, [][]int{{}, {}, {0}, {1}, {2}}},
		{RoundRobin, "dataflow_job", 7, 20, [][]int{{10, 11, 19}, {12, 13}, {0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}}},
		{RoundRobin, "dataflow_job", 8, 5, [][]int{{}, {}, {0}, {1}, {2}, {3}, {4}, {}}},
		{RoundRobin, "orderJob", 1, 3, [][]int{{0, 1, 2}}},
		{RoundRobin, "orderJob", 2, 7, [][]int{{3, 4, 5}, {0, 1, 2, 6}}},
		{RoundRobin, "orderJob", 3, 2, [][]int{{}, {0}, {1}}},
		{RoundRobin, "orderJob", 3, 8, [][]int{{4, 5}, {0, 1, 6}, {2, 3, 7}}},
		{RoundRobin, "orderJob", 3, 10, [][]int{{6, 7, 8}, {0, 1, 2, 9}, {3, 4, 5}}},
		{RoundRobin, "orderJob", 4, 10, [][]int{{2, 3, 9}, {4, 5}, {6, 7}, {0, 1, 8}}},
		{RoundRobin, "orderJob", 5, 3, [][]int{{2}, {}, {}, {0}, {1}}},
		{RoundRobin, "orderJob", 7, 20, [][]int{{8, 9, 18}, {10, 11, 19}, {12, 13}, {0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}}},
		{RoundRobin, "orderJob", 8, 5, [][]int{{1}, {2}, {3}, {4}, {}, {}, {}, {0}}},
		{RoundRobin, "作业", 1, 3, [][]int{{0, 1, 2}}},
		{RoundRobin, "作业", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{RoundRobin, "作业", 3, 2, [][]int{{1}, {}, {0}}},
		{RoundRobin, "作业", 3, 8, [][]int{{2, 3, 7}, {4, 5}, {0, 1, 6}}},
		{RoundRobin, "作业", 3, 10, [][]int{{3, 4, 5}, {6, 7, 8}, {0, 1, 2, 9}}},
		{RoundRobin, "作业", 4, 10, [][]int{{4, 5}, {6, 7}, {0, 1, 8}, {2, 3, 9}}},
		{RoundRobin, "作业", 5, 3, [][]int{{0}, {1}, {2}, {}, {}}},
		{RoundRobin, "作业", 7, 20, [][]int{{12, 13}, {0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}, {10, 11, 19}}},
		{RoundRobin, "作业", 8, 5, [][]int{{2}, {3}, {4}, {}, {}, {}, {0}, {1}}},
		{RoundRobin, "job😀", 1, 3, [][]int{{0, 1, 2}}},
		{RoundRobin, "job😀", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{RoundRobin, "job😀", 3, 2, [][]int{{}, {0}, {1}}},
		{RoundRobin, "job😀", 3, 8, [][]int{{4, 5}, {0, 1, 6}, {2, 3, 7}}},
		{RoundRobin, "job😀", 3, 10, [][]int{{6, 7, 8}, {0, 1, 2, 9}, {3, 4, 5}}},
		{RoundRobin, "job😀", 4, 10, [][]int{{0, 1, 8}, {2, 3, 9}, {4, 5}, {6, 7}}},
		{RoundRobin, "job😀", 5, 3, [][]int{{1}, {2}, {}, {}, {0}}},
		{RoundRobin, "job😀", 7, 20, [][]int{{0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}, {10, 11, 19}, {12, 13}}},
		{RoundRobin, "job😀", 8, 5, [][]int{{0}, {1}, {2}, {3}, {4}, {}, {}, {}}},
		{RoundRobin, "", 1, 3, [][]int{{0, 1, 2}}},
		{RoundRobin, "", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{RoundRobin, "", 3, 2, [][]int{{0}, {1}, {}}},
		{RoundRobin, "", 3, 8, [][]int{{0, 1, 6}, {2, 3, 7}, {4, 5}}},
		{RoundRobin, "", 3, 10, [][]int{{0, 1, 2, 9}, {3, 4, 5}, {6, 7, 8}}},
		{RoundRobin, "", 4, 10, [][]int{{0, 1, 8}, {2, 3, 9}, {4, 5}, {6, 7}}},
		{RoundRobin, "", 5, 3, [][]int{{0}, {1}, {2}, {}, {}}},
		{RoundRobin, "", 7, 20, [][]int{{0, 1, 14}, {2, 3, 15}, {4, 5, 16}, {6, 7, 17}, {8, 9, 18}, {10, 11, 19}, {12, 13}}},
		{RoundRobin, "", 8, 5, [][]int{{0}, {1}, {2}, {3}, {4}, {}, {}, {}}},
		{RoundRobin, "polygenelubricants", 1, 3, [][]int{{0, 1, 2}}},
		{RoundRobin, "polygenelubricants", 2, 7, [][]int{{0, 1, 2, 6}, {3, 4, 5}}},
		{RoundRobin, "polygenelubricants", 3, 2, nil /* ElasticJob: IndexOutOfBoundsException */},
		{RoundRobin, "polygenelubricants", 3, 8, nil /* ElasticJob: IndexOutOfBoundsException */},
		{RoundRobin, "polygenelubricants", 3, 10, nil /* ElasticJob: IndexOutOfBoundsException */},
		{RoundRobin, "polygenelubricants", 4, 10, [][]int{{0, 1, 8}, {2, 3, 9}, {4, 5}, {6, 7}}},
		{RoundRobin, "polygenelubricants", 5, 3, nil /* ElasticJob: IndexOutOfBoundsException */},
		{RoundRobin, "polygenelubricants", 7, 20, nil /* ElasticJob: IndexOutOfBoundsException */},
		{RoundRobin, "polygenelubricants", 8, 5, [][]int{{0}, {1}, {2}, {3}, {4}, {}, {}, {}}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%q/%d/%d", tt.strategy, tt.job, tt.n, tt.total), func(t *testing.T) {
			s, err := Lookup(tt.strategy)
			if err != nil {
				t.Fatal(err)
			}
			servers, want := positional(tt.n, tt.want)
			got, err := Assign(s, tt.job, servers, tt.total)
			if want == nil {
				if !errors.Is(err, ErrJobNameHashOverflow) {
					t.Fatalf("got %v, %v; want error wrapping ErrJobNameHashOverflow", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Assign: %v", err)
			}
			if !equalAssignment(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}
