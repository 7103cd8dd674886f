package embedded_test

import (
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter/embedded"
)

// TestSecondStartOnADirFailsAtOnce: while a member runs on a Dir, a second
// start on it returns ErrDirInUse within its StartTimeout, naming the
// hosting process and its endpoint, instead of waiting for etcd's own
// file lock for ever; once the first has closed, the Dir starts again.
func TestSecondStartOnADirFailsAtOnce(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	first, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	type result struct {
		srv *embedded.Server
		err error
	}
	done := make(chan result, 1)
	go func() {
		srv, err := embedded.Start(ctx, embedded.Config{Dir: dir, StartTimeout: 2 * time.Second})
		done <- result{srv, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second): // a bound, far past the StartTimeout
		t.Fatal("a second start on a Dir in use still waits 30s after its 2s StartTimeout")
	}
	if r.err == nil {
		r.srv.Close()
		t.Fatal("a second start on a Dir in use succeeded")
	}
	if !errors.Is(r.err, embedded.ErrDirInUse) {
		t.Fatalf("second start: %v, want ErrDirInUse", r.err)
	}
	for _, want := range []string{"process " + strconv.Itoa(os.Getpid()), first.Endpoint()} {
		if !strings.Contains(r.err.Error(), want) {
			t.Errorf("%q does not name %q", r.err, want)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		t.Fatalf("a start after the first closed: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestJoinSaysWhenANamespaceRunsOnTwoMembers: two processes that mean to
// share a namespace but name different Dirs run two registries, and every
// item would run in both: each says so in an error naming the other Dir.
func TestJoinSaysWhenANamespaceRunsOnTwoMembers(t *testing.T) {
	ctx := testCtx(t)
	ns := "split"
	dirs := []string{t.TempDir(), t.TempDir()}
	// The notes of the host's namespaces go under the temporary
	// directory: this test's own, apart from other runs.
	t.Setenv("TMPDIR", t.TempDir())
	var logs [2]syncLog
	for i, dir := range dirs {
		s, err := embedded.Join(ctx, embedded.Config{Dir: dir, Namespace: ns, Logger: slog.New(slog.NewTextHandler(&logs[i], nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if !s.Hosting() {
			t.Fatalf("Join on a fresh Dir %s does not host its member", dir)
		}
	}
	for i, other := range []string{dirs[1], dirs[0]} {
		deadline := time.After(time.Minute) // the first finds out at its next look, in seconds
		for !strings.Contains(logs[i].String(), "two embedded members") || !strings.Contains(logs[i].String(), other) {
			select {
			case <-deadline:
				t.Fatalf("the Join on %s does not name %s within a minute: %q", dirs[i], other, logs[i].String())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	// One Dir per namespace says nothing.
	var quiet syncLog
	s, err := embedded.Join(ctx, embedded.Config{Dir: dirs[0], Namespace: ns + "x", Logger: slog.New(slog.NewTextHandler(&quiet, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Hosting() {
		t.Fatal("a second Join on a hosted Dir hosts a member too")
	}
	if strings.Contains(quiet.String(), "two embedded members") {
		t.Fatalf("a namespace on one member is reported split: %q", quiet.String())
	}
}

// syncLog is a log sink safe for a logger and the test at once.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
