// Package etcd is a [regcenter.Center] on an etcd cluster (the v3 API),
// through etcd's Go client. Importing it registers the backend that
// [regcenter.Open] uses for a Config that sets Etcd, or EmbeddedDir (the
// directory of an embedded member, package regcenter/embedded, on this
// host):
//
//	import _ "github.com/shardjob/shardjob/regcenter/etcd"
//
//	rc, err := regcenter.Open(ctx, regcenter.Config{Etcd: []string{"etcd1:2379", "etcd2:2379", "etcd3:2379"}, Namespace: "shop"})
//
// or call [Open] for a *[Center], which adds the client (Client),
// KeepAlives, WatchCount and SessionTimeout. Only the programs that import
// this package (or regcenter/embedded, built on it) link etcd's client.
//
// It owns what is etcd's alone: ZooKeeper's tree laid out over etcd's
// flat key space (a node key and a meta key per node), the session as a
// lease kept alive by the center and fenced on the monotonic clock, every
// write as one transaction whose compares are its operations'
// preconditions, one namespace watch resumed from the revision after the
// last event it delivered, the probe that names why a TLS handshake
// failed, and the client of an embedded member that follows the member
// when another process of its host takes it over. What every backend
// shares (the session's events, Config, the sentinel errors) is package
// regcenter's.
package etcd
