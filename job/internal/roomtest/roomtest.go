// Package roomtest starts what the tests of package job's rooms run
// against: a real ZooKeeper (regcenter/zktest) and centers opened on it,
// each closed when its test ends. It is imported by tests only.
package roomtest

import (
	"context"
	"log/slog"
	"path"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// Timeout bounds the context ZooKeeper returns, and each Open.
const Timeout = time.Minute

// Open opens a center on the ZooKeeper servers in namespace, logging
// nothing, and closes it when tb ends.
func Open(tb testing.TB, servers []string, namespace string) *zookeeper.Center {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: servers, Namespace: namespace}, regcenter.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = rc.Close() })
	return rc
}

// ZooKeeper starts a ZooKeeper for tb, opens a center on it in namespace
// (Open) and returns it with a context that ends after Timeout or with
// tb.
func ZooKeeper(tb testing.TB, namespace string) (context.Context, *zookeeper.Center) {
	tb.Helper()
	zc := zktest.Start(tb)
	rc := Open(tb, zc.Servers(), namespace)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	tb.Cleanup(cancel)
	return ctx, rc
}

// Put writes data at p, creating p (and its parents) when it is missing.
func Put(tb testing.TB, ctx context.Context, rc regcenter.Center, p string, data []byte) {
	tb.Helper()
	if err := rc.EnsurePath(ctx, path.Dir(p)); err != nil {
		tb.Fatal(err)
	}
	if _, err := rc.Set(ctx, p, data, -1); err == nil {
		return
	}
	if _, err := rc.Create(ctx, p, data, regcenter.Persistent); err != nil {
		tb.Fatal(err)
	}
}

// Exists reports whether p exists.
func Exists(tb testing.TB, ctx context.Context, rc regcenter.Center, p string) bool {
	tb.Helper()
	ok, _, err := rc.Exists(ctx, p)
	if err != nil {
		tb.Fatal(err)
	}
	return ok
}
