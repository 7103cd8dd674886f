package registration

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// TestLeaveOnARealRegistry: a leave clears the assignment it read, drops
// the status, flags a reshard (already flagged: no error) and queues what
// it hands over, in one transaction; a leave with nothing registered
// changes nothing and fails not.
func TestLeaveOnARealRegistry(t *testing.T) {
	zc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: "leave"}, regcenter.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	paths := layout.Job("j")
	for _, p := range []string{paths.Flag("s1", layout.Status), paths.Necessary()} {
		if err := rc.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.EnsurePath(ctx, paths.ShardingEpoch()); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Create(ctx, paths.Flag("s1", layout.Sharding), []byte("0,2,5"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	var handed []int
	held, queued, err := Leave(ctx, Leaving{RC: rc, Paths: paths, Job: "j", Server: "s1", FlagReshard: true,
		HandOver: func(held []int) []failover.Entry {
			handed = held
			return []failover.Entry{{Item: 2, Fire: 1000, From: "s1"}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(held, []int{0, 2, 5}) || !slices.Equal(handed, held) || len(queued) != 1 {
		t.Fatalf("held %v, handed over for %v, queued %v", held, handed, queued)
	}
	if data, _, err := rc.Get(ctx, paths.Flag("s1", layout.Sharding)); err != nil || len(data) != 0 {
		t.Fatalf("assignment after leaving: %q, %v", data, err)
	}
	if ok, _, _ := rc.Exists(ctx, paths.Flag("s1", layout.Status)); ok {
		t.Fatal("the status is still there")
	}
	items, err := failover.NewQueue(rc, "j").Items(ctx)
	if err != nil || !slices.Equal(items, []int{2}) {
		t.Fatalf("queue %v, %v", items, err)
	}

	// Again: nothing held, nothing to hand over, nothing fails.
	held, queued, err = Leave(ctx, Leaving{RC: rc, Paths: paths, Job: "j", Server: "s1", FlagReshard: true})
	if err != nil || len(held) != 0 || queued != nil {
		t.Fatalf("a second leave: held %v queued %v err %v", held, queued, err)
	}
}
