package regcenter

// SetEtcdKeepAlive turns e's lease keepalives off (as when every one is
// lost) or back on.
func SetEtcdKeepAlive(e *Etcd, on bool) { e.keepAliveOff.Store(!on) }

// HoldEtcdWatch closes e's namespace watch and keeps it closed until
// release is called; it then resumes from the last revision it delivered.
func HoldEtcdWatch(e *Etcd) (release func()) {
	ch := make(chan struct{})
	e.watchHold.Store(&ch)
	select {
	case e.watchKick <- struct{}{}:
	default:
	}
	return func() {
		e.watchHold.Store(nil)
		close(ch)
	}
}

// EtcdNodeKey is the etcd key that holds node p's header and data, for
// tests that write it with a raw client, past the center.
func EtcdNodeKey(e *Etcd, p string) string { return e.nodeKey(p) }

// EtcdMetaKey is the etcd key of node p's ctime and cversion.
func EtcdMetaKey(e *Etcd, p string) string { return e.metaKey(p) }
