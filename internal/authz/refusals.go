package authz

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// RefusalInterval is how often one kind of refusal is written to the log
// at most.
const RefusalInterval = 10 * time.Second

// RefusalLog writes refused requests to the log without letting a client
// flood it: the first refusal of a kind is written at once (Warn, with its
// path and remote address); those that follow within RefusalInterval are
// counted, and the count is written in one line ("refused 57 requests in
// the last 10s: ...", with the latest one's details) by the first request
// of any kind that reaches the handler once the interval is over. Kinds
// are a fixed set of strings, so its memory is bounded whatever the
// traffic. It is safe for concurrent use.
type RefusalLog struct {
	log    *slog.Logger
	prefix string
	every  time.Duration
	now    func() time.Time // time.Now; a test's clock

	pending atomic.Int64 // refusals counted and not written yet: a fast path for flush
	mu      sync.Mutex
	kinds   map[string]*refusalKind
}

// refusalKind is the state of one kind of refusal.
type refusalKind struct {
	written time.Time // when its last line was written
	count   int64     // refusals since then, not written
	last    []any     // the latest counted one's attributes
}

// NewRefusalLog returns a refusal log writing to log, each line beginning
// with prefix ("shardjob admin: ").
func NewRefusalLog(log *slog.Logger, prefix string) *RefusalLog {
	return &RefusalLog{log: log, prefix: prefix, every: RefusalInterval, now: time.Now, kinds: map[string]*refusalKind{}}
}

// SetClock replaces the log's clock (time.Now): a test's. Call it before
// the log is used.
func (l *RefusalLog) SetClock(now func() time.Time) { l.now = now }

// Pending returns how many refusals are counted and not written yet.
func (l *RefusalLog) Pending() int64 { return l.pending.Load() }

// Refused records a refusal of kind, with attrs describing the request,
// and reports whether it wrote a line (true) or only counted it.
func (l *RefusalLog) Refused(kind string, attrs ...any) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	k := l.kinds[kind]
	if k == nil {
		k = &refusalKind{}
		l.kinds[kind] = k
	}
	if !k.written.IsZero() && now.Sub(k.written) < l.every {
		k.count++
		k.last = attrs
		l.pending.Add(1)
		return false
	}
	if k.count == 0 {
		l.log.Warn(l.prefix+kind, attrs...)
		k.written = now
		return true
	}
	// Counted ones are waiting: write them with this one, in one line.
	k.count++
	k.last = attrs
	l.pending.Add(1)
	l.writeCount(kind, k, now)
	return true
}

// Flush writes the counts whose interval is over. It costs an atomic load
// when nothing is waiting.
func (l *RefusalLog) Flush() {
	if l.pending.Load() == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for kind, k := range l.kinds {
		if k.count > 0 && now.Sub(k.written) >= l.every {
			l.writeCount(kind, k, now)
		}
	}
}

// writeCount writes k's count in one line and starts its next interval.
// l.mu is held.
func (l *RefusalLog) writeCount(kind string, k *refusalKind, now time.Time) {
	in := now.Sub(k.written).Round(time.Second)
	l.log.Warn(fmt.Sprintf("%srefused %d requests in the last %v: %s", l.prefix, k.count, in, kind),
		"refused", k.count, "since", k.written, slog.Group("latest", k.last...))
	l.pending.Add(-k.count)
	k.count, k.last, k.written = 0, nil, now
}
