package marks

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// TestRetryNodeOnARealRegistry: NoteRetry makes the node the first time
// and sets it after; ReadRetry gives the count for the fire it names, none
// for another fire or no node, and none, reported, for garbage.
func TestRetryNodeOnARealRegistry(t *testing.T) {
	zc := zktest.Start(t)
	rc := roomtest.Open(t, zc.Servers(), "marks")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	paths := layout.Job("r")
	if err := rc.EnsurePath(ctx, paths.Item(3)); err != nil {
		t.Fatal(err)
	}
	var reported []string
	report := func(p string, _ regcenter.Stat, _ []byte, msg string, _ ...any) {
		reported = append(reported, fmt.Sprintf("%s: %s", p, msg))
	}
	fire := time.UnixMilli(1764547200000)
	if n, err := ReadRetry(ctx, rc, paths, 3, fire, report); n != 0 || err != nil {
		t.Fatalf("no node: %d, %v", n, err)
	}
	for failed := 1; failed <= 2; failed++ {
		if err := NoteRetry(ctx, rc, paths, 3, fire, failed); err != nil {
			t.Fatalf("note %d: %v", failed, err)
		}
		if n, err := ReadRetry(ctx, rc, paths, 3, fire, report); n != failed || err != nil {
			t.Fatalf("after noting %d: read %d, %v", failed, n, err)
		}
	}
	if n, err := ReadRetry(ctx, rc, paths, 3, fire.Add(time.Second), report); n != 0 || err != nil {
		t.Errorf("another fire: %d, %v", n, err)
	}
	if _, err := rc.Set(ctx, paths.ItemNode(3, layout.Retry), []byte(`{"fire":1764547200000,"failed":-4}`), -1); err != nil {
		t.Fatal(err)
	}
	if n, err := ReadRetry(ctx, rc, paths, 3, fire, report); n != 0 || err != nil {
		t.Errorf("garbage: %d, %v", n, err)
	}
	if len(reported) != 1 {
		t.Errorf("reported %q, want the garbage once", reported)
	}
}
