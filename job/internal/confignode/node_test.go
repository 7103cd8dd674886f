package confignode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/leakcheck"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

var zk *zktest.Cluster

func TestMain(m *testing.M) { os.Exit(zktest.RunTests(leakcheck.Checked(m), &zk)) }

var namespaces atomic.Int64

// node opens a session on a namespace of its own and returns a Node on
// /cfg whose local config is *local; a document "bad" does not decode.
func node(t *testing.T, local *string) (context.Context, *Node[string]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	ns := fmt.Sprintf("confignode%d_%d", os.Getpid(), namespaces.Add(1))
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zk.Servers(), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Close() })
	return ctx, &Node[string]{RC: rc, Path: "/cfg", Job: "j", Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Bad: &stored.BadValues{},
		Encode: func() ([]byte, error) { return []byte(*local), nil },
		Decode: func(_ context.Context, data []byte) (string, error) {
			if string(data) == "bad" {
				return "", errBad
			}
			return string(data), nil
		}}
}

var errBad = errors.New("does not decode")

func value(ctx context.Context, t *testing.T, n *Node[string]) string {
	t.Helper()
	data, _, err := n.RC.Get(ctx, n.Path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestLoad(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stored    string // "" for no node
		overwrite bool
		want      string // the node after Load
		use       bool
	}{
		{name: "no node", want: "local"},
		{name: "no node, overwrite", overwrite: true, want: "local"},
		{name: "stored wins", stored: "theirs", want: "theirs", use: true},
		{name: "overwrite", stored: "theirs", overwrite: true, want: "local"},
		{name: "stored does not decode", stored: "bad", want: "bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local := "local"
			ctx, n := node(t, &local)
			if tc.stored != "" {
				if _, err := n.RC.Create(ctx, n.Path, []byte(tc.stored), regcenter.Persistent); err != nil {
					t.Fatal(err)
				}
			}
			cfg, use, err := n.Load(ctx, tc.overwrite)
			if err != nil || use != tc.use || use && cfg != tc.stored {
				t.Fatalf("Load = %q, %t, %v; want use %t", cfg, use, err, tc.use)
			}
			if got := value(ctx, t, n); got != tc.want {
				t.Errorf("node holds %q, want %q", got, tc.want)
			}
		})
	}
}

// Adopt decides as Load with the node read already, and writes nothing:
// the caller writes what it returns in its own transaction.
func TestAdopt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stored    string
		overwrite bool
		cfg       string
		use       bool
		write     string // "" for nothing to write
	}{
		{name: "stored wins", stored: "theirs", cfg: "theirs", use: true},
		{name: "overwrite", stored: "theirs", overwrite: true, write: "local"},
		{name: "stored does not decode", stored: "bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local := "local"
			n := &Node[string]{Path: "/cfg", Job: "j", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Encode: func() ([]byte, error) { return []byte(local), nil },
				Decode: func(_ context.Context, data []byte) (string, error) {
					if string(data) == "bad" {
						return "", errBad
					}
					return string(data), nil
				}}
			cfg, use, write, err := n.Adopt(context.Background(), tc.overwrite, []byte(tc.stored))
			if err != nil || cfg != tc.cfg || use != tc.use || string(write) != tc.write {
				t.Fatalf("Adopt = %q, %v, %q, %v; want %q, %v, %q", cfg, use, write, err, tc.cfg, tc.use, tc.write)
			}
		})
	}
}

func TestRestore(t *testing.T) {
	local := "local"
	ctx, n := node(t, &local)
	if err := n.Restore(ctx, func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	if got := value(ctx, t, n); got != "local" {
		t.Fatalf("restored %q", got)
	}
	local = "newer"
	if err := n.Restore(ctx, func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	if got := value(ctx, t, n); got != "local" {
		t.Errorf("a node there was written over: %q", got)
	}
}

func TestReadReportsABadVersionOnce(t *testing.T) {
	local := "local"
	ctx, n := node(t, &local)
	if _, _, err := n.Read(ctx); err != nil {
		t.Fatalf("no node: rejected %v", err)
	}
	if _, err := n.RC.Create(ctx, n.Path, []byte("bad"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, ok, rejected := n.Read(ctx); ok || !errors.Is(rejected, errBad) {
		t.Fatalf("bad: ok %t, rejected %v", ok, rejected)
	}
	if _, ok, rejected := n.Read(ctx); ok || rejected != nil {
		t.Fatalf("bad again: ok %t, rejected %v; want it reported once", ok, rejected)
	}
	if _, err := n.RC.Set(ctx, n.Path, []byte("good"), -1); err != nil {
		t.Fatal(err)
	}
	if cfg, ok, rejected := n.Read(ctx); !ok || cfg != "good" || rejected != nil {
		t.Fatalf("good: %q, %t, %v", cfg, ok, rejected)
	}
}

func TestGone(t *testing.T) {
	local := "local"
	ctx, n := node(t, &local)
	coord := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 5*time.Second) }
	wait := func() time.Duration { return time.Second }
	if got := n.Gone(ctx, coord, wait); got != Absent {
		t.Errorf("no node: %v, want Absent", got)
	}
	if _, err := n.RC.Create(ctx, n.Path, []byte("bad"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if got := n.Gone(ctx, coord, wait); got != Present {
		t.Errorf("a node that does not decode: %v, want Present", got)
	}
}
