// Package hostiledoc builds hostile job config documents for tests: YAML
// whose merge keys recurse without end or fan out exponentially, and
// configs whose values are too large to store.
package hostiledoc

import (
	"fmt"
	"strings"
)

// SelfMerge returns a 70-byte document for job whose merge key, on line 2,
// merges the mapping that contains it.
func SelfMerge(job string) []byte {
	return fmt.Appendf(nil, "name: %s\n<<: &a {cron: \"* * * * * *\", <<: *a}\nshardingTotalCount: 6\n", job)
}

// SelfMergeError is the text the rejection of SelfMerge contains.
const SelfMergeError = "merge key at line 2 refers to itself"

// MergeChain returns a document for job of levels anchored mappings, each
// merging the one before twice, the whole merged into the top level:
// about 1 KB for 40 levels, and 2^levels mappings when expanded.
func MergeChain(job string, levels int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ncron: \"* * * * * *\"\nshardingTotalCount: 6\n", job)
	b.WriteString("x0: &a0 {description: d}\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "x%d: &a%d {<<: [*a%d, *a%d]}\n", i, i, i-1, i-1)
	}
	fmt.Fprintf(&b, "<<: *a%d\n", levels)
	return []byte(b.String())
}

// MergeChainError is the text the rejection of MergeChain contains.
const MergeChainError = "expands beyond"

// The stored config document's reader (internal/docsubset) knows no
// merge keys, anchors or aliases: it refuses SelfMerge and MergeChain at
// their first, with these texts.
const (
	StoredSelfMergeError  = "invalid YAML at line 2: a merge key (<<) is not supported"
	StoredMergeChainError = "an anchor (&) is not supported"
)

// ItemParameters returns shardingItemParameters for count items of about
// size bytes in all: 10,000 items and 1.26 MB is the size a config node
// cannot hold.
func ItemParameters(count, size int) string {
	per := max(1, size/count-len(fmt.Sprint(count))-2)
	value := strings.Repeat("p", per)
	parts := make([]string, count)
	for i := range parts {
		parts[i] = fmt.Sprintf("%d=%s", i, value)
	}
	return strings.Join(parts, ",")
}
