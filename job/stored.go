package job

import "github.com/shardjob/shardjob/regcenter"

// A value read from the registry that does not decode (garbage written by
// hand, by another program, by a raw etcd client) is never read as a
// removal: the config keeps the last good one in force, a record or mark
// reads as absent and is written again by the next completion, an
// assignment asks for a reshard, the load table is rebuilt. Each bad
// version of a node is reported once (stored.BadValues); only the config
// node's absence, read back, removes a job (configGone). The values, their
// codecs and the report are job/internal/stored's.

// reportBadValue logs that data, the value of p at stat st, does not
// decode (stored.BadValues.Report), for the rooms that read nodes for the
// runner (records.Reader, reshard.ReadDebt) and take a reporter.
func (r *runner) reportBadValue(p string, st regcenter.Stat, data []byte, msg string, args ...any) {
	r.bad.Report(r.log, p, st.Mzxid, st.Version, data, msg, args...)
}
