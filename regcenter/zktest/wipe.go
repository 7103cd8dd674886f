package zktest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shardjob/shardjob/internal/testing/testserver"
)

// RestartAllWiped stops every member, deletes each member's data (its
// snapshots and transaction logs; the member id stays), and starts them all
// again: ZooKeeper comes back empty, as after an operator restored a blank
// data directory. Clients that saw the old data are refused by the new
// servers until they open a fresh session. It waits until each member serves
// or ctx ends (two minutes if ctx has no deadline).
func (c *Cluster) RestartAllWiped(ctx context.Context) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	ctx, cancel := testserver.WithDefaultTimeout(ctx)
	defer cancel()
	for i := range c.members {
		if err := c.stopLocked(i, true); err != nil {
			return err
		}
	}
	for _, m := range c.members {
		data := filepath.Join(m.dir, "data")
		entries, err := os.ReadDir(data)
		if err != nil {
			return fmt.Errorf("zktest: wiping %s: %w", data, err)
		}
		for _, e := range entries {
			if e.Name() == "myid" {
				continue
			}
			if err := os.RemoveAll(filepath.Join(data, e.Name())); err != nil {
				return fmt.Errorf("zktest: wiping %s: %w", data, err)
			}
		}
	}
	c.log.Info("zktest: data wiped", "members", len(c.members))
	return c.startAll(ctx)
}
