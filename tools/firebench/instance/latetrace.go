package main

import (
	"log/slog"
	"os"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"
)

// lateTrace keeps an execution trace of the process's last seconds in
// memory (a flight recorder) and writes it once, to path, a moment after
// a scheduled fire first starts after or later than its time: what the
// process did while that fire waited, for go tool trace (-pprof=sched
// names where goroutines waited for a CPU).
type lateTrace struct {
	path    string
	after   time.Duration
	from    time.Duration // how long after READY a late fire writes it
	log     *slog.Logger
	rec     *trace.FlightRecorder
	armed   atomic.Bool
	armedAt time.Time // set before armed
	written sync.WaitGroup
}

// newLateTrace returns a lateTrace writing to path, for a fire as late as
// after from from after READY on; with an empty path it does nothing.
func newLateTrace(path string, after, from time.Duration, log *slog.Logger) *lateTrace {
	return &lateTrace{path: path, after: after, from: from, log: log}
}

// start begins recording, and arms the trace l.from later.
func (l *lateTrace) start() {
	if l.path == "" {
		return
	}
	l.rec = trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 3 * time.Second, MaxBytes: 256 << 20})
	if err := l.rec.Start(); err != nil {
		l.log.Warn("flight recorder", "err", err)
		l.rec = nil
		return
	}
	l.armedAt = time.Now().Add(l.from)
	l.armed.Store(true)
}

// observe notes a scheduled fire's run started late; the first as late as
// after writes the trace 200ms later (what followed too), on a goroutine
// stop waits for.
func (l *lateTrace) observe(late time.Duration) {
	if late < l.after || time.Now().Before(l.armedAt) || !l.armed.CompareAndSwap(true, false) {
		return
	}
	l.log.Warn("late fire: writing the execution trace", "late", late, "file", l.path)
	l.written.Go(func() {
		time.Sleep(200 * time.Millisecond)
		f, err := os.Create(l.path)
		if err != nil {
			l.log.Warn("late trace", "err", err)
			return
		}
		if _, err := l.rec.WriteTo(f); err != nil {
			l.log.Warn("late trace", "err", err)
		}
		if err := f.Close(); err != nil {
			l.log.Warn("late trace", "err", err)
		}
	})
}

// stop waits for a trace being written and stops recording.
func (l *lateTrace) stop() {
	if l.rec == nil {
		return
	}
	l.armed.Store(false)
	l.written.Wait()
	l.rec.Stop()
}
