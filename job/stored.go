package job

import (
	"context"

	"github.com/shardjob/shardjob/internal/docsubset"
	"github.com/shardjob/shardjob/job/internal/confignode"
	"github.com/shardjob/shardjob/regcenter"
)

// A value read from the registry that does not decode (garbage written by
// hand, by another program, by a raw etcd client) is never read as a
// removal: the config keeps the last good one in force, a record or mark
// reads as absent and is written again by the next completion, an
// assignment asks for a reshard, the load table is rebuilt. Each bad
// version of a node is reported once (stored.BadValues); only the config
// node's absence, read back, removes a job (configGone). The values and
// their codecs are job/internal/stored's.

// reportBad logs that data, the value of p at stat st, does not decode,
// quoting its start, at warn level the first time for that version and at
// debug level after that. It reports whether this was the first time.
func (r *runner) reportBad(p string, st regcenter.Stat, data []byte, msg string, args ...any) bool {
	args = append(args, "data", docsubset.QuoteShort(string(data)), "node", p, "version", st.Version)
	if r.bad.First(p, st.Mzxid) {
		r.log.Warn(msg, args...)
		return true
	}
	r.log.Debug(msg, args...)
	return false
}

// configGone runs when a watch reports the config node deleted. The job
// stops here only when the node is absent when read back
// (confignode.Node.Gone); a value nobody can decode is a bad config, not
// a removal.
func (r *runner) configGone(ctx context.Context) {
	switch r.configNode().Gone(ctx, func() (context.Context, context.CancelFunc) { return r.coordCtx(r.rc.Session()) }, r.sessionTimeout) {
	case confignode.Absent:
		r.s.removeRemoved(r)
	case confignode.Present:
		r.reloadConfig()
	}
}
