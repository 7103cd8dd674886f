package testlog

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ringSize is how many records a test's ring keeps.
const ringSize = 1 << 18

// ring holds the latest records of one test, unformatted.
type ring struct {
	mu   sync.Mutex
	recs []slog.Record
	next int
	full bool
}

var (
	ringsMu sync.Mutex
	rings   = map[testing.TB]*ring{}
)

// ringOf returns t's ring, made (with its dump at t's end) on first use.
func ringOf(t testing.TB) *ring {
	ringsMu.Lock()
	defer ringsMu.Unlock()
	if r, ok := rings[t]; ok {
		return r
	}
	r := newRing(ringSize)
	rings[t] = r
	t.Cleanup(func() {
		ringsMu.Lock()
		delete(rings, t)
		ringsMu.Unlock()
		if !t.Failed() {
			return
		}
		name := filepath.Join(os.TempDir(), "shardjob-"+strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+fmt.Sprintf("-%d.log", os.Getpid()))
		if err := r.dump(name); err != nil {
			t.Logf("the debug log could not be written: %v", err)
			return
		}
		t.Logf("debug log of the test's latest %d records: %s", ringSize, name)
	})
	return r
}

// newRing returns a ring keeping the latest n records.
func newRing(n int) *ring { return &ring{recs: make([]slog.Record, n)} }

// add keeps rec, in place of the oldest record when the ring is full.
func (r *ring) add(rec slog.Record) {
	r.mu.Lock()
	r.recs[r.next] = rec
	r.next++
	if r.next == len(r.recs) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// dump writes the ring's records, oldest first, to a new file at name.
func (r *ring) dump(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	h := slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug})
	r.mu.Lock()
	recs := append(append([]slog.Record(nil), r.recs[r.next:]...), r.recs[:r.next]...)
	if !r.full {
		recs = recs[len(recs)-r.next:]
	}
	r.mu.Unlock()
	for _, rec := range recs {
		_ = h.Handle(context.Background(), rec)
	}
	return f.Close()
}

// ringHandler keeps every record in a ring and passes warnings and
// errors on to warn.
type ringHandler struct {
	ring  *ring
	warn  slog.Handler
	attrs []slog.Attr // from WithAttrs, added to each record kept
}

// Enabled keeps every level.
func (h *ringHandler) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps rec, with the handler's attributes, and passes it on to
// warn when warn takes its level.
func (h *ringHandler) Handle(ctx context.Context, rec slog.Record) error {
	kept := rec.Clone()
	if len(h.attrs) > 0 {
		kept.AddAttrs(h.attrs...)
	}
	h.ring.add(kept)
	if h.warn.Enabled(ctx, rec.Level) {
		return h.warn.Handle(ctx, rec)
	}
	return nil
}

// WithAttrs adds attrs to every record kept and passed on.
func (h *ringHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	c.warn = h.warn.WithAttrs(attrs)
	return &c
}

// WithGroup groups the warnings' attributes; the ring's records keep
// theirs ungrouped (a debugging aid: the tests' loggers use no groups).
func (h *ringHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.warn = h.warn.WithGroup(name)
	return &c
}
