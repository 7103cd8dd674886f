// Package demoreg gives the example programs their registry: ZooKeeper
// with -zk host:port,..., an etcd cluster with -etcd host:port,...,
// PostgreSQL with -pg postgres://user@host:port/db (its password in
// PGPASSWORD or a passfile, never in the URL), or, when none is given, a single-member etcd inside the process
// ([embedded.Start]) whose data lives in a fresh temporary
// directory that Close removes. The default needs nothing but Go.
//
// A demo that runs several instances in one process opens one center per
// instance with [regcenter.Open] and [Registry.Config]: each has a session
// of its own, as separate processes would.
package demoreg

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/embedded"
	_ "github.com/shardjob/shardjob/regcenter/etcd"      // -etcd: regcenter.Open serves Config.Etcd
	_ "github.com/shardjob/shardjob/regcenter/postgres"  // -pg: regcenter.Open serves postgres:// URLs
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // -zk: and Config.Servers
)

// Environment variables that stand in for the flags.
const (
	EnvZooKeeper = "SHARDJOB_ZK"
	EnvEtcd      = "SHARDJOB_ETCD"
	EnvPostgres  = "SHARDJOB_PG"
)

// Flags are the -zk, -etcd and -pg flags of a demo.
type Flags struct {
	fs           *flag.FlagSet
	zk, etcd, pg string
}

// Register defines -zk, -etcd and -pg on fs (flag.CommandLine when nil).
// Their defaults come from SHARDJOB_ZK, SHARDJOB_ETCD and SHARDJOB_PG.
func Register(fs *flag.FlagSet) *Flags {
	if fs == nil {
		fs = flag.CommandLine
	}
	f := &Flags{fs: fs}
	fs.StringVar(&f.zk, "zk", os.Getenv(EnvZooKeeper), "ZooKeeper `host:port` list, comma-separated (env "+EnvZooKeeper+"; default: an embedded etcd)")
	fs.StringVar(&f.etcd, "etcd", os.Getenv(EnvEtcd), "etcd `host:port` endpoints, comma-separated (env "+EnvEtcd+"; default: an embedded etcd)")
	fs.StringVar(&f.pg, "pg", os.Getenv(EnvPostgres), "PostgreSQL `url` postgres://user@host:port/db, no password in it: PGPASSWORD or a passfile (env "+EnvPostgres+"; default: an embedded etcd)")
	return f
}

// Given reports whether -zk, -etcd or -pg (or its variable) names a
// registry, after fs.Parse.
func (f *Flags) Given() bool {
	return strings.TrimSpace(f.zk) != "" || strings.TrimSpace(f.etcd) != "" || strings.TrimSpace(f.pg) != ""
}

// Registry is the registry a demo runs on. Close it at the end.
type Registry struct {
	cfg    regcenter.Config
	server *embedded.Server
	dir    string
	desc   string
}

// Start returns the registry the flags name, for namespace ns, after
// fs.Parse. With no flag (nor its variable) it starts an embedded etcd
// member with its data in a new temporary directory. Two of -zk, -etcd
// and -pg given together are refused, naming both.
func (f *Flags) Start(ctx context.Context, ns string) (*Registry, error) {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	zk, etcd, pg := split(f.zk), split(f.etcd), strings.TrimSpace(f.pg)
	if n := btoi(set["zk"]) + btoi(set["etcd"]) + btoi(set["pg"]); n == 1 {
		// A flag over the other registries' variables.
		if !set["zk"] {
			zk = nil
		}
		if !set["etcd"] {
			etcd = nil
		}
		if !set["pg"] {
			pg = ""
		}
	}
	named := []string{}
	for _, r := range []struct {
		given     bool
		flag, env string
	}{{len(zk) > 0, "-zk", EnvZooKeeper}, {len(etcd) > 0, "-etcd", EnvEtcd}, {pg != "", "-pg", EnvPostgres}} {
		if r.given {
			named = append(named, fmt.Sprintf("%s (or %s)", r.flag, r.env))
		}
	}
	if len(named) > 1 {
		return nil, fmt.Errorf("%s both name a registry: give one", strings.Join(named, " and "))
	}
	cfg := regcenter.Config{Servers: zk, Etcd: etcd, URL: pg, Namespace: ns}
	switch {
	case pg != "":
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("-pg: %w", err)
		}
		return &Registry{cfg: cfg, desc: "PostgreSQL at " + redacted(pg)}, nil
	case len(zk) > 0:
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("-zk: %w", err)
		}
		return &Registry{cfg: cfg, desc: "ZooKeeper at " + strings.Join(zk, ",")}, nil
	case len(etcd) > 0:
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("-etcd: %w", err)
		}
		return &Registry{cfg: cfg, desc: "etcd at " + strings.Join(etcd, ",")}, nil
	}
	dir, err := os.MkdirTemp("", "shardjob-demo-")
	if err != nil {
		return nil, fmt.Errorf("a directory for the embedded etcd: %w", err)
	}
	srv, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting the embedded etcd: %w", err), os.RemoveAll(dir))
	}
	return &Registry{cfg: srv.Config(cfg), server: srv, dir: dir,
		desc: fmt.Sprintf("embedded etcd on %s (data in %s, removed at the end)", srv.Endpoint(), dir)}, nil
}

// Config returns the config a center connects with: Servers (ZooKeeper),
// Etcd or URL (PostgreSQL), and the namespace. Set other fields on the copy as needed.
func (r *Registry) Config() regcenter.Config { return r.cfg }

// Embedded reports whether the registry is the embedded etcd member.
func (r *Registry) Embedded() bool { return r.server != nil }

// String says which registry this is, for the demo's first lines.
func (r *Registry) String() string { return r.desc }

// Close stops the embedded member, if there is one, and removes its
// directory; close every center on it first. It does nothing for a
// registry given by a flag.
func (r *Registry) Close() error {
	if r.server == nil {
		return nil
	}
	return errors.Join(r.server.Close(), os.RemoveAll(r.dir))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// redacted is u with any password masked, for the demo's first lines.
func redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable url)"
	}
	return p.Redacted()
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
