// Package zookeeper is a [regcenter.Center] on Apache ZooKeeper, through
// the go-zookeeper/zk client. Importing it registers the backend that
// [regcenter.Open] uses for a Config that sets Servers:
//
//	import _ "github.com/shardjob/shardjob/regcenter/zookeeper"
//
//	rc, err := regcenter.Open(ctx, regcenter.Config{Servers: []string{"zk1:2181", "zk2:2181", "zk3:2181"}, Namespace: "shop"})
//
// or call [Open] for a *[Center], which adds WatchCount and
// SessionTimeout. Only the programs that import this package link the
// ZooKeeper client.
//
// It owns what is ZooKeeper's alone: the connection and its dialer
// (TLS, the reason a connect failed), the fencing lease renewed from the
// send time of the latest request the server answered (the dialer pairs
// each answer with its request), the replacement of a client the servers
// keep refusing after the ensemble lost its data, one-shot watches made
// persistent by a dispatcher that re-arms each before its subscribers
// hear of the change, and Multi as one ZooKeeper transaction. What every
// backend shares (the session's events, Config, the sentinel errors) is
// package regcenter's.
package zookeeper
