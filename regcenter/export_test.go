package regcenter

// QueuedMultis reports how many Multi calls wait in c's queue (c made by
// GroupCommit), for tests that build a group on purpose.
func QueuedMultis(c Center) int {
	g := c.(*groupCommit)
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// UnlinkBackend makes Open find no package linked for backend (a
// BackendZooKeeper or BackendEtcd) until restore is called, as in a
// program that does not import it.
func UnlinkBackend(backend string) (restore func()) {
	openersMu.Lock()
	defer openersMu.Unlock()
	fn, ok := backends[backend]
	delete(backends, backend)
	return func() {
		openersMu.Lock()
		defer openersMu.Unlock()
		if ok {
			backends[backend] = fn
		}
	}
}
