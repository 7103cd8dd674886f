// Package backend holds what the registry backends of regcenter
// (regcenter/zookeeper, regcenter/etcd, regcenter/postgres) share besides
// regcenter's public API: the watch table and dispatch queue, the request
// counters behind Stats, the checks of a write's size against
// Config.MaxNodeBytes, the settling of a Config into what a constructor
// connects with, and the helpers of a tree built from a Center's own
// operations. It is internal so that regcenter's public API stays the
// one users see.
package backend
