package regcenter

// QueuedMultis reports how many Multi calls wait in c's queue (c made by
// GroupCommit), for tests that build a group on purpose.
func QueuedMultis(c Center) int {
	g := c.(*groupCommit)
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}
