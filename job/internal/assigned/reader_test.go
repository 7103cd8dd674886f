package assigned

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// resharder counts the requests; its reshard writes fix, if set.
type resharder struct {
	requests int
	fix      func(ctx context.Context) error
}

func (r *resharder) Request(context.Context) error { r.requests++; return nil }
func (r *resharder) Await(ctx context.Context) error {
	if r.fix != nil {
		return r.fix(ctx)
	}
	return nil
}

func TestReaderOnARealRegistry(t *testing.T) {
	zc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: "assigned"}, regcenter.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	paths := layout.Job("j")
	if err := rc.EnsurePath(ctx, paths.ShardingEpoch()); err != nil {
		t.Fatal(err)
	}
	node := paths.Flag("s1", layout.Sharding)
	if err := rc.EnsurePath(ctx, paths.Flag("s1", layout.Status)); err != nil {
		t.Fatal(err)
	}
	rs := &resharder{}
	rd := &Reader{RC: rc, Paths: paths, Server: "s1", Reshard: rs, Log: slog.New(slog.DiscardHandler), Quote: func(s string) string { return s }}
	sess := rc.Session()

	epoch, _, err := rd.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, err := rd.Read(ctx, sess, epoch)
	if err != nil || !a.Set || a.ShardSeen || len(a.Items) != 0 {
		t.Fatalf("no node: %+v, %v", a, err)
	}

	if _, err := rc.Create(ctx, node, []byte("1,3-4"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	a, err = rd.Read(ctx, sess, epoch)
	if err != nil || !a.ShardSeen || !slices.Equal(a.Items, []int{1, 3, 4}) || a.Epoch != epoch {
		t.Fatalf("items: %+v, %v", a, err)
	}
	ok, err := rd.Prove(ctx, a.Checks(paths, "s1"))
	if err != nil || !ok {
		t.Fatalf("a fresh assignment's proof: %v, %v", ok, err)
	}

	// Garbage: a reshard is asked for; the leader's writes a list.
	if _, err := rc.Set(ctx, node, []byte("garbage"), -1); err != nil {
		t.Fatal(err)
	}
	if ok, err := rd.Prove(ctx, a.Checks(paths, "s1")); err != nil || ok {
		t.Fatalf("a moved assignment's proof: %v, %v", ok, err)
	}
	rs.fix = func(ctx context.Context) error { _, err := rc.Set(ctx, node, []byte("2"), -1); return err }
	a, err = rd.Read(ctx, sess, epoch)
	if err != nil || rs.requests != 1 || !slices.Equal(a.Items, []int{2}) || a.Epoch != Unproved {
		t.Fatalf("after garbage: %+v, %v, %d requests", a, err, rs.requests)
	}
	// Garbage the reshard does not fix: an error naming the node.
	if _, err := rc.Set(ctx, node, []byte("garbage"), -1); err != nil {
		t.Fatal(err)
	}
	rs.fix = func(ctx context.Context) error { _, err := rc.Set(ctx, node, []byte("x"), -1); return err }
	if _, err := rd.Read(ctx, sess, epoch); err == nil || !strings.Contains(err.Error(), node) {
		t.Fatalf("garbage after a reshard: %v", err)
	}
}
