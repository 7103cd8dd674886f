// Package testserver is what the test servers of regcenter/zktest and
// regcenter/etcdtest share: a server run as a process of its own (in its
// own process group, reaped by a goroutine of its own, killed by the
// kernel on Linux when the process that started it dies, stopped
// gracefully or not), and a throwaway CA that signs a server and a client
// certificate for TLS clusters.
package testserver
