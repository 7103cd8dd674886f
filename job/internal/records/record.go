package records

import (
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/stored"
)

// Record is an item's completed node as this instance last read or wrote
// it: what it says ran and, when Versioned, the node's Version. A
// completion writes its record over that version only, so that what
// another instance wrote meanwhile (a failover run of the item, a previous
// owner paying its debt) is read and kept, not overwritten. The zero
// Record knows nothing.
type Record struct {
	fireplan.Cover
	Version   int32
	Versioned bool
	// Failed are the recent failed runs the record lists
	// (stored.Completed.Failed).
	Failed []stored.FailedRun
	// Foreign is set on a record whose node names another process's
	// completion journal: what was read is that node with the journal's
	// entry added, which its version does not prove (Provable), since that
	// process adds to its journal without writing the node.
	Foreign bool
	// Journal is the completion journal the node names
	// (stored.Completed.Journal), as last read or written.
	Journal string
}

// Pending is a held item's record deferred here: what the latest run's
// completion would have written (its Mark, the record's Cover) over the
// Version the node had then.
type Pending struct {
	Mark    stored.Completed
	Cover   fireplan.Cover
	Version int32
	Item    int
	seq     uint64 // the Cache's number for it (Flushed)
}
