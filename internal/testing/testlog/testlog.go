// Package testlog routes log output into a test's log, so that it shows
// with the test that produced it (and only when the test fails or runs
// with -v).
package testlog

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
)

// Writer writes each line it is given as one test log line.
type Writer struct{ T testing.TB }

// Write logs p, without its trailing newline, through T.Log.
func (w Writer) Write(p []byte) (int, error) {
	w.T.Helper()
	w.T.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Logger returns a logger for t: warnings and errors into t's log, or,
// with SHARDJOB_TEST_LOG set, everything down to debug on standard error.
// With SHARDJOB_TEST_LOG=ring, warnings and errors go into t's log and
// everything down to debug is kept unformatted in memory (the latest
// ringSize records of the test, shared by every logger made for t), and
// written to a file named in t's log if t fails: a trace of a failure
// that formatting every record as it comes would make too slow to
// happen.
func Logger(t testing.TB) *slog.Logger {
	warn := slog.NewTextHandler(Writer{t}, &slog.HandlerOptions{Level: slog.LevelWarn})
	switch os.Getenv("SHARDJOB_TEST_LOG") {
	case "":
		return slog.New(warn)
	case "ring":
		return slog.New(&ringHandler{ring: ringOf(t), warn: warn})
	default:
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

// Buffer is a log destination that goroutines may write to while a test
// reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Lines returns what was written so far, one element per line, without
// the trailing newline.
func (l *Buffer) Lines() []string {
	return strings.Split(strings.TrimSpace(l.String()), "\n")
}
