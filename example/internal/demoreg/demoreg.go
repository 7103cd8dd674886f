// Package demoreg gives the example programs their registry: ZooKeeper
// with -zk host:port,..., an etcd cluster with -etcd host:port,..., or,
// when neither is given, a single-member etcd inside the process
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
	"os"
	"strings"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/embedded"
)

// Environment variables that stand in for the flags.
const (
	EnvZooKeeper = "SHARDJOB_ZK"
	EnvEtcd      = "SHARDJOB_ETCD"
)

// Flags are the -zk and -etcd flags of a demo.
type Flags struct {
	fs       *flag.FlagSet
	zk, etcd string
}

// Register defines -zk and -etcd on fs (flag.CommandLine when nil). Their
// defaults come from SHARDJOB_ZK and SHARDJOB_ETCD.
func Register(fs *flag.FlagSet) *Flags {
	if fs == nil {
		fs = flag.CommandLine
	}
	f := &Flags{fs: fs}
	fs.StringVar(&f.zk, "zk", os.Getenv(EnvZooKeeper), "ZooKeeper `host:port` list, comma-separated (env "+EnvZooKeeper+"; default: an embedded etcd)")
	fs.StringVar(&f.etcd, "etcd", os.Getenv(EnvEtcd), "etcd `host:port` endpoints, comma-separated (env "+EnvEtcd+"; default: an embedded etcd)")
	return f
}

// Given reports whether -zk or -etcd (or its variable) names a registry,
// after fs.Parse.
func (f *Flags) Given() bool { return strings.TrimSpace(f.zk) != "" || strings.TrimSpace(f.etcd) != "" }

// Registry is the registry a demo runs on. Close it at the end.
type Registry struct {
	cfg    regcenter.Config
	server *embedded.Server
	dir    string
	desc   string
}

// Start returns the registry the flags name, for namespace ns, after
// fs.Parse. With neither flag (nor its variable) it starts an embedded
// etcd member with its data in a new temporary directory. -zk and -etcd
// given together are refused, naming both.
func (f *Flags) Start(ctx context.Context, ns string) (*Registry, error) {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	zk, etcd := split(f.zk), split(f.etcd)
	switch {
	case set["zk"] && !set["etcd"]:
		etcd = nil // a flag over the other registry's variable
	case set["etcd"] && !set["zk"]:
		zk = nil
	}
	if len(zk) > 0 && len(etcd) > 0 {
		return nil, fmt.Errorf("-zk (or %s) and -etcd (or %s) both name a registry: give one", EnvZooKeeper, EnvEtcd)
	}
	cfg := regcenter.Config{Servers: zk, Etcd: etcd, Namespace: ns}
	switch {
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

// Config returns the config a center connects with: Servers (ZooKeeper)
// or Etcd, and the namespace. Set other fields on the copy as needed.
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

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
