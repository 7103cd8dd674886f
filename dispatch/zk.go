package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// zkNodes is where nodes given a regcenter keep an ephemeral node per
// lease, under the regcenter's namespace.
const zkNodes = "/dispatch/nodes"

// registerLease creates a new lease: first its ephemeral ZooKeeper node
// (with a regcenter), then its row. In that order, any row a watcher reads
// before it lists the ephemeral nodes has its ephemeral node listed unless
// that node really is gone.
func (d *Dispatcher) registerLease(ctx context.Context, now time.Time) (string, error) {
	lease := d.cfg.NodeID + "/" + newUUID()[:8]
	if rc := d.cfg.Regcenter; rc != nil {
		if err := rc.EnsurePath(ctx, zkNodes); err != nil {
			return "", fmt.Errorf("dispatch: %s in the registry: %w", zkNodes, err)
		}
		if _, err := rc.Create(ctx, zkNodes+"/"+url.PathEscape(lease), nil, regcenter.Ephemeral); err != nil {
			return "", fmt.Errorf("dispatch: lease %s in the registry: %w", lease, err)
		}
	}
	if err := d.st.registerNode(ctx, lease, now.Add(d.cfg.LeaseTTL)); err != nil {
		return "", err
	}
	return lease, nil
}

// zkLoop ties leases to ZooKeeper sessions. When this node's session ends,
// its handlers are cancelled at once and it takes a new lease under the
// next session. When another node's ephemeral node goes, its lease is
// reaped at once instead of after LeaseTTL.
func (d *Dispatcher) zkLoop(ctx context.Context) {
	rc := d.cfg.Regcenter
	changed := make(chan struct{}, 1)
	cancelWatch := rc.Watch(zkNodes, regcenter.WatchChildren, func(regcenter.Event) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer cancelWatch()
	for ctx.Err() == nil {
		sess := rc.Session()
		select {
		case <-ctx.Done():
			return
		case <-sess.Done():
			if errors.Is(sess.Err(), regcenter.ErrClosed) {
				// Its owner closed the regcenter: the ephemeral node is gone,
				// so other nodes free this node's tasks now; stop its
				// handlers. No new lease can be taken without a session.
				d.log.Error("dispatch: the regcenter was closed: cancelling handlers; this node takes no more tasks", "lease", d.Node())
				d.mu.Lock()
				d.renewedAt = time.Time{}
				d.mu.Unlock()
				d.cancelAllLocal()
				return
			}
			d.zkSessionLost(ctx, sess)
		case <-changed:
			if err := d.reapVanished(ctx); err != nil && ctx.Err() == nil {
				d.log.Warn("dispatch: reap leases whose registry session ended", "err", err)
			}
		}
	}
}

// zkSessionLost cancels this node's handlers and, once a new session is
// up, registers a new lease under it.
func (d *Dispatcher) zkSessionLost(ctx context.Context, old *regcenter.Session) {
	d.stats.leaseLost.Add(1)
	d.log.Error("dispatch: registry session ended: cancelling handlers; their tasks go to other nodes", "lease", d.Node(), "err", old.Err())
	d.mu.Lock()
	d.renewedAt = time.Time{} // claim nothing on the old lease
	d.mu.Unlock()
	d.cancelAllLocal()
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		if s := d.cfg.Regcenter.Session(); s != old && s.Err() == nil {
			now := d.clock.Now()
			lease, err := d.registerLease(ctx, now)
			if err == nil {
				d.mu.Lock()
				d.node, d.renewedAt = lease, now
				d.mu.Unlock()
				d.log.Info("dispatch: new lease under the new registry session", "lease", lease)
				d.kick()
				return
			}
			d.log.Warn("dispatch: register a lease under the new session", "err", err)
		}
		backOff(ctx, &delay)
	}
}

// reapVanished frees the leases whose ephemeral node is gone. The rows are
// read before the children (see registerLease).
func (d *Dispatcher) reapVanished(ctx context.Context) error {
	rows, err := d.st.db.QueryContext(ctx, `SELECT id FROM dispatch_nodes`)
	if err != nil {
		return err
	}
	var leases []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		leases = append(leases, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	kids, err := d.cfg.Regcenter.Children(ctx, zkNodes)
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return err
	}
	live := map[string]bool{}
	for _, k := range kids {
		if id, err := url.PathUnescape(k); err == nil {
			live[id] = true
		}
	}
	var gone []string
	for _, id := range leases {
		if !live[id] {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	dead, rs, err := d.st.reapLeases(ctx, gone, d.clock.Now(), d.cfg.Backoff.Delay)
	if err != nil {
		return err
	}
	if len(dead) > 0 {
		d.log.Info("dispatch: reaped leases whose registry session ended", "nodes", dead, "tasks", len(rs))
	}
	d.stats.reaped.Add(int64(len(rs)))
	d.afterRelease(rs)
	return nil
}
