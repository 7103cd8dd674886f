package embedded_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
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
