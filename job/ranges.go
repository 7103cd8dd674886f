package job

import (
	"context"
)

// Range jobs: a job of many items takes them as contiguous
// ranges, one call per run of consecutive items this instance holds per
// fire, instead of one call per item. The item is still the unit of
// placement and of every guarantee (its running mark, its completed
// record, failover); only the call covers several. With ItemsPerShard, an
// item stands for a block of that many records, so a SCOPE job of 1,000
// items of 1,000 records each serves a million records on three instances
// with three calls per fire and assignment nodes such as "0-332".

// RangeJob is a job that takes its items as ranges. Add a value that
// implements it (RangeFunc does) and the scheduler calls ExecuteRange
// once per contiguous run of the items it holds, per fire; an error fails
// every item of the range.
type RangeJob interface {
	Job
	ExecuteRange(ctx context.Context, rc RangeContext) error
}

// RangeContext describes one execution of a contiguous run of items.
type RangeContext struct {
	// ShardingContext is the run's context; its Item is First and its
	// ItemParameter First's.
	ShardingContext
	// First and Last are the run's items, inclusive.
	First, Last int
	// Start and End are the records the run covers, [Start, End):
	// First*ItemsPerShard to (Last+1)*ItemsPerShard.
	Start, End int64
	// Keys, for a job whose items come from data (ItemLister), are the
	// keys of First through Last in the list in force at the fire, ""
	// for an item without one; nil for other jobs.
	Keys []string
}

// Items returns how many items the run covers.
func (rc RangeContext) Items() int { return rc.Last - rc.First + 1 }

// RangeFunc adapts a function to [RangeJob]. Its Execute, for a single
// item, calls the function with a range of that item alone.
type RangeFunc func(ctx context.Context, rc RangeContext) error

// ExecuteRange calls f.
func (f RangeFunc) ExecuteRange(ctx context.Context, rc RangeContext) error { return f(ctx, rc) }

// Execute calls f with the range of sc's item alone (ItemsPerShard 1).
func (f RangeFunc) Execute(ctx context.Context, sc ShardingContext) error {
	return f(ctx, RangeContext{ShardingContext: sc, First: sc.Item, Last: sc.Item, Start: int64(sc.Item), End: int64(sc.Item) + 1})
}
