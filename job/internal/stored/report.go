package stored

import (
	"log/slog"

	"github.com/shardjob/shardjob/internal/docsubset"
)

// Report logs to log that data, the value of the node at p in its version
// written at mzxid (the registry's Stat.Mzxid; version is its
// Stat.Version), does not decode, with msg and args and the value's start
// quoted: at warn level the first time for that version (First) and at
// debug level after that. It reports whether this was the first time.
func (b *BadValues) Report(log *slog.Logger, p string, mzxid int64, version int32, data []byte, msg string, args ...any) bool {
	args = append(args, "data", docsubset.QuoteShort(string(data)), "node", p, "version", version)
	if b.First(p, mzxid) {
		log.Warn(msg, args...)
		return true
	}
	log.Debug(msg, args...)
	return false
}
