package demoreg

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

func parse(t *testing.T, args ...string) *Flags {
	t.Helper()
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	f := Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestEmbeddedDefault: with no flag, the demo gets an embedded etcd in a
// fresh directory, shared by several centers, and Close removes the
// directory.
func TestEmbeddedDefault(t *testing.T) {
	t.Setenv(EnvZooKeeper, "")
	t.Setenv(EnvEtcd, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := parse(t).Start(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Embedded() || len(r.Config().Etcd) != 1 || r.Config().Namespace != "demo" {
		t.Fatalf("registry %s, config %+v: want the embedded etcd", r, r.Config())
	}
	if _, err := os.Stat(r.dir); err != nil {
		t.Fatalf("data directory: %v", err)
	}
	for _, id := range []string{"a", "b"} {
		c, err := regcenter.Open(ctx, r.Config())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(ctx, "/servers/"+id, nil, regcenter.Ephemeral); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.dir); !os.IsNotExist(err) {
		t.Errorf("data directory after Close: %v, want it gone", err)
	}
}

// TestFlags: -zk and -etcd name the registry, a flag wins over the other
// registry's variable, and both flags are refused naming both.
func TestFlags(t *testing.T) {
	ctx := context.Background()
	t.Setenv(EnvZooKeeper, "")
	t.Setenv(EnvEtcd, "")
	r, err := parse(t, "-zk", "127.0.0.1:2181").Start(ctx, "demo")
	if err != nil || r.Embedded() || strings.Join(r.Config().Servers, ",") != "127.0.0.1:2181" || len(r.Config().Etcd) != 0 {
		t.Errorf("-zk: %v %+v", err, r)
	}
	r, err = parse(t, "-etcd", "127.0.0.1:2379, 127.0.0.1:2380").Start(ctx, "demo")
	if err != nil || r.Embedded() || strings.Join(r.Config().Etcd, ",") != "127.0.0.1:2379,127.0.0.1:2380" || len(r.Config().Servers) != 0 {
		t.Errorf("-etcd: %v %+v", err, r)
	}
	if _, err := parse(t, "-zk", "a:1", "-etcd", "b:2").Start(ctx, "demo"); err == nil || !strings.Contains(err.Error(), "-zk") || !strings.Contains(err.Error(), "-etcd") {
		t.Errorf("-zk with -etcd: %v", err)
	}
	if _, err := parse(t, "-etcd", "nohostport").Start(ctx, "demo"); err == nil || !strings.Contains(err.Error(), "nohostport") {
		t.Errorf("-etcd nohostport: %v", err)
	}
	t.Setenv(EnvZooKeeper, "zk:2181")
	r, err = parse(t, "-etcd", "e:2379").Start(ctx, "demo")
	if err != nil || len(r.Config().Servers) != 0 || strings.Join(r.Config().Etcd, ",") != "e:2379" {
		t.Errorf("-etcd over %s: %v %+v", EnvZooKeeper, err, r)
	}
	t.Setenv(EnvEtcd, "e:2379")
	if _, err := parse(t).Start(ctx, "demo"); err == nil {
		t.Errorf("%s and %s both set: accepted", EnvZooKeeper, EnvEtcd)
	}
}

// TestPostgresFlag: -pg names a PostgreSQL registry by URL, wins over the
// other registries' variables, is refused with another flag, and a URL
// with a password is refused without repeating it.
func TestPostgresFlag(t *testing.T) {
	ctx := context.Background()
	t.Setenv(EnvZooKeeper, "")
	t.Setenv(EnvEtcd, "")
	t.Setenv(EnvPostgres, "")
	const u = "postgres://shardjob@db.example:5432/jobs"
	r, err := parse(t, "-pg", u).Start(ctx, "demo")
	if err != nil || r.Embedded() || r.Config().URL != u || len(r.Config().Servers) != 0 || !strings.Contains(r.String(), "PostgreSQL") {
		t.Errorf("-pg: %v %+v", err, r)
	}
	if _, err := parse(t, "-zk", "a:1", "-pg", u).Start(ctx, "demo"); err == nil || !strings.Contains(err.Error(), "-zk") || !strings.Contains(err.Error(), "-pg") {
		t.Errorf("-zk with -pg: %v", err)
	}
	if _, err := parse(t, "-pg", "postgres://shardjob:hunter2@db.example/jobs").Start(ctx, "demo"); err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "password") {
		t.Errorf("-pg with a password: %v", err)
	}
	t.Setenv(EnvZooKeeper, "zk:2181")
	r, err = parse(t, "-pg", u).Start(ctx, "demo")
	if err != nil || len(r.Config().Servers) != 0 || r.Config().URL != u {
		t.Errorf("-pg over %s: %v %+v", EnvZooKeeper, err, r)
	}
	t.Setenv(EnvPostgres, u)
	if _, err := parse(t).Start(ctx, "demo"); err == nil {
		t.Errorf("%s and %s both set: accepted", EnvZooKeeper, EnvPostgres)
	}
	r, err = parse(t, "-zk", "z:1").Start(ctx, "demo")
	if err != nil || r.Config().URL != "" || strings.Join(r.Config().Servers, ",") != "z:1" {
		t.Errorf("-zk over %s: %v %+v", EnvPostgres, err, r)
	}
}
