package configcheck

import "time"

// The limits and defaults of a config, as package job names them
// (MaxNameLength, MinInterval, ...; their docs are there).
const (
	MaxNameLength            = 128
	MaxShardingTotalCount    = 10000
	MaxItemsPerShard         = 1 << 30
	DefaultReconcileInterval = time.Minute
	MinInterval              = time.Second
	MaxLimit                 = 100_000
	MaxParents               = 16
)

// The words of the policies (job.MisfirePolicy, job.OverlapPolicy,
// job.ParentPolicy), as a document writes them.
const (
	MisfireOnce      = "once"
	MisfireSkip      = "skip"
	OverlapBufferOne = "buffer-one"
	OverlapSkip      = "skip"
	OverlapReplace   = "replace"
	OverlapAllow     = "allow"
	ParentSkip       = "skip"
	ParentRun        = "run"
	ParentAlert      = "alert"
)

// alertGapFires is how many of the schedule's next fires the longest gap
// between fires is measured over (an alert's notRunFor).
const alertGapFires = 32
