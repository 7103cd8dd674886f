package configcheck

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/shardjob/shardjob/internal/docsubset"
)

var (
	nameRE     = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	strategyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
)

// ValidName reports whether name is a usable registry node name of at
// most MaxNameLength characters (its other problems aside: see Name).
func ValidName(name string) bool { return len(name) <= MaxNameLength && nameRE.MatchString(name) }

// Name checks a job's name.
func Name(add Add, name string) {
	switch {
	case name == "":
		add("name", BadName, "name is required", "")
	case len(name) > MaxNameLength:
		add("name", BadName, "name "+docsubset.QuoteShort(name), fmt.Sprintf("longer than %d characters", MaxNameLength))
	case !nameRE.MatchString(name):
		add("name", BadName, fmt.Sprintf("name %q", name), "may contain only letters, digits, '.', '_' and '-'")
	case strings.HasPrefix(name, "."):
		add("name", BadName, fmt.Sprintf("name %q", name), "is reserved: names beginning with '.' are the namespace's own nodes")
	}
}

// Counts checks the item count and the records per item, and reports
// whether the count is within its bounds.
func Counts(add Add, total, itemsPerShard int) (countOK bool) {
	countOK = total >= 1 && total <= MaxShardingTotalCount
	if !countOK {
		add("shardingTotalCount", BadCount, fmt.Sprintf("shardingTotalCount %d", total),
			fmt.Sprintf("must be between 1 and %d", MaxShardingTotalCount))
	}
	if itemsPerShard < 0 || itemsPerShard > MaxItemsPerShard {
		add("itemsPerShard", BadCount, fmt.Sprintf("itemsPerShard %d", itemsPerShard),
			fmt.Sprintf("must be between 0 (one record per item) and %d", MaxItemsPerShard))
	}
	return countOK
}

// Policies checks the misfire and overlap policies, and that they agree.
func Policies(add Add, misfire, overlap string, unmonitored bool) {
	switch misfire {
	case "", MisfireOnce, MisfireSkip:
	default:
		add.invalid("misfire", "misfire "+docsubset.QuoteShort(misfire), fmt.Sprintf("must be %q or %q", MisfireOnce, MisfireSkip))
	}
	switch overlap {
	case "", OverlapBufferOne, OverlapSkip, OverlapReplace, OverlapAllow:
		if overlap != "" && misfire != "" && (overlap == OverlapSkip) != (misfire == MisfireSkip) {
			add.invalid("overlap", "overlap "+docsubset.QuoteShort(overlap), fmt.Sprintf("disagrees with misfire %q: set only overlap", misfire))
		}
		if overlap == OverlapAllow && !unmonitored {
			add.invalid("overlap", "overlap "+docsubset.QuoteShort(overlap),
				"needs monitorExecution: false (Unmonitored): an item's running and completed marks cannot stand for two runs of it at once")
		}
	default:
		add.invalid("overlap", "overlap "+docsubset.QuoteShort(overlap),
			fmt.Sprintf("must be %q, %q, %q or %q", OverlapBufferOne, OverlapSkip, OverlapReplace, OverlapAllow))
	}
}

// Intervals checks the timeout, the records' interval (at most
// maxRecord, and none for an unmonitored job), the clock difference
// tolerated and the reconcile interval.
func Intervals(add Add, timeout, recordInterval, maxRecord time.Duration, unmonitored bool, maxTimeDiff, reconcile time.Duration) {
	if timeout < 0 {
		add.invalid("timeout", fmt.Sprintf("timeout %v", timeout), "must not be negative (0 means no timeout)")
	}
	switch {
	case recordInterval < 0 || recordInterval > maxRecord:
		add.invalid("recordInterval", fmt.Sprintf("recordInterval %v", recordInterval),
			fmt.Sprintf("must be between 0 (record every completion) and %v", maxRecord))
	case recordInterval > 0 && unmonitored:
		add.invalid("recordInterval", fmt.Sprintf("recordInterval %v", recordInterval), "an unmonitored job keeps no records")
	}
	interval(add, "maxTimeDiff", maxTimeDiff, "no check")
	interval(add, "reconcileInterval", reconcile, "the default "+DefaultReconcileInterval.String())
}

// interval checks that d, keyed key, is 0 (which means zeroMeans) or at
// least MinInterval.
func interval(add Add, key string, d time.Duration, zeroMeans string) {
	switch {
	case d < 0:
		add.invalid(key, fmt.Sprintf("%s %v", key, d), "must not be negative")
	case d > 0 && d < MinInterval:
		add.invalid(key, fmt.Sprintf("%s %v", key, d), fmt.Sprintf("must be 0 (%s) or at least %v", zeroMeans, MinInterval))
	}
}

// Strategy checks the form of a sharding strategy's name ("" is the
// default's).
func Strategy(add Add, strategy string) {
	if strategy != "" && (len(strategy) > MaxNameLength || !strategyRE.MatchString(strategy)) {
		add.invalid("shardingStrategy", "shardingStrategy "+docsubset.QuoteShort(strategy),
			"must be an identifier: a letter or '_', then letters, digits, '_', '.' or '-'")
	}
}
