package script

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype"
)

// output logs a command's standard output and error line by line, up to a
// limit of bytes for both together, and keeps the tail of standard error
// and the tail of standard output (the run's output, see record).
type output struct {
	log   *slog.Logger
	limit int

	mu      sync.Mutex
	logged  int // bytes logged so far
	dropped int // bytes past the limit
	tail    []byte
	stdout  []byte            // the last job.MaxOutputSize bytes of standard output at least
	written int64             // bytes written to standard output
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
	if w.name == "stdout" {
		o.keepStdout(p)
	}
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

// keepStdout keeps the end of standard output: at least its last
// job.MaxOutputSize bytes, in a buffer of at most twice that.
func (o *output) keepStdout(p []byte) {
	o.written += int64(len(p))
	if len(p) >= job.MaxOutputSize {
		o.stdout = append(o.stdout[:0], p[len(p)-job.MaxOutputSize:]...)
		return
	}
	if len(o.stdout)+len(p) > 2*job.MaxOutputSize {
		keep := o.stdout[len(o.stdout)-(job.MaxOutputSize-len(p)):]
		o.stdout = append(o.stdout[:copy(o.stdout, keep)], p...)
		return
	}
	o.stdout = append(o.stdout, p...)
}

// record records the end of standard output as the run's output (see
// jobtype.Output): the whole of it when it is one JSON value that fits,
// else its last bytes as a JSON string. An empty standard output records
// nothing. Outside a scheduler's run (a test calling Execute) there is
// no run to record it for, and nothing is done.
func (o *output) record(ctx context.Context) {
	o.mu.Lock()
	text := o.stdout
	if len(text) > job.MaxOutputSize {
		text = text[len(text)-job.MaxOutputSize:]
	}
	out := jobtype.Output(text, o.written > int64(len(text)), true)
	o.mu.Unlock()
	if out == nil {
		return
	}
	if err := job.RecordOutput(ctx, out); err != nil && !errors.Is(err, job.ErrOutputOutsideRun) {
		o.log.Warn("cannot record the command's output", "err", err)
	}
}
