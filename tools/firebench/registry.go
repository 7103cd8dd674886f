package main

import "github.com/shardjob/shardjob/tools/benchkit/registry"

// The registries -registry names (tools/benchkit/registry starts them).
const (
	regZooKeeper = registry.ZooKeeper
	regEtcd      = registry.Etcd
	regPostgres  = registry.Postgres
)

// center is what the bench reads from a center besides the Center
// interface: every implementation counts its registered watches.
type center = registry.Center
