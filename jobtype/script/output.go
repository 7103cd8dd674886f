package script

import (
	"bytes"
	"log/slog"
	"sync"
)

// output logs a command's standard output and error line by line, up to a
// limit of bytes for both together, and keeps the tail of standard error.
type output struct {
	log   *slog.Logger
	limit int

	mu      sync.Mutex
	logged  int // bytes logged so far
	dropped int // bytes past the limit
	tail    []byte
	partial map[string][]byte // an unfinished line per stream
}

func newOutput(log *slog.Logger, limit int) *output {
	return &output{log: log, limit: limit, partial: map[string][]byte{}}
}

// stream returns the writer of one stream ("stdout" or "stderr").
func (o *output) stream(name string) *streamWriter { return &streamWriter{o: o, name: name} }

type streamWriter struct {
	o    *output
	name string
}

// Write logs every complete line of p; it never fails, so the command is
// never blocked or broken by its own output.
func (w *streamWriter) Write(p []byte) (int, error) {
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if w.name == "stderr" {
		o.tail = append(o.tail, p...)
		if len(o.tail) > StderrTail {
			o.tail = append([]byte(nil), o.tail[len(o.tail)-StderrTail:]...)
		}
	}
	buf := append(o.partial[w.name], p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		o.emitLocked(w.name, buf[:i])
		buf = buf[i+1:]
	}
	if len(buf) > o.limit {
		// A very long line without a newline: log what fits.
		o.emitLocked(w.name, buf)
		buf = nil
	}
	o.partial[w.name] = append([]byte(nil), buf...)
	return len(p), nil
}

func (o *output) emitLocked(stream string, line []byte) {
	n := len(line) + 1
	if o.logged+n > o.limit {
		o.dropped += n
		return
	}
	o.logged += n
	o.log.Info("output", "stream", stream, "line", string(line))
}

// flush logs unfinished lines and, if anything was dropped, how much.
func (o *output) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range []string{"stdout", "stderr"} {
		if len(o.partial[s]) > 0 {
			o.emitLocked(s, o.partial[s])
			o.partial[s] = nil
		}
	}
	if o.dropped > 0 {
		o.log.Warn("output over the limit was not logged", "limit", o.limit, "dropped_bytes", o.dropped)
	}
}

func (o *output) stderrTail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.tail)
}
