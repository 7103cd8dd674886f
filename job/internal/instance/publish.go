package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/process"
	"github.com/shardjob/shardjob/regcenter"
)

// registering wraps a registry error of the node's publication.
func registering(err error) error { return fmt.Errorf("registering the instance: %w", err) }

// Publish creates or updates the instance node (ephemeral, of the
// current session). The node is also this process's claim on its server
// id: found held by another session, it is taken over only from an
// earlier life of this process or a dead process of this host
// (job/internal/process); a live process elsewhere makes it fail with an
// error wrapping Config.InUse.
func (n *Node) Publish(ctx context.Context) error {
	data, err := json.Marshal(n.Info())
	if err != nil {
		return err
	}
	rc := n.cfg.RC
	p := layout.Instance(n.cfg.Server)
	sess := rc.Session()
	old, st, err := rc.Get(ctx, p)
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
		_, err = rc.Create(ctx, p, data, regcenter.Ephemeral)
		if errors.Is(err, regcenter.ErrNodeExists) {
			// Another process got there first: look again.
			return n.Publish(ctx)
		}
	case err != nil:
		return registering(err)
	case st.EphemeralOwner == sess.ID():
		_, err = rc.Set(ctx, p, data, -1)
	default:
		var info placement.Instance
		if st.EphemeralOwner != 0 {
			info, _ = placement.DecodeInstance(old) // garbage says no holder: refused below
			if !process.Holder(info.Holder).EarlierLifeOf(n.cfg.Me) {
				return InUse(n.cfg.InUse, n.cfg.Server, process.Holder(info.Holder), st.EphemeralOwner, n.cfg.SessionTimeout())
			}
			// Ours, from a lost session or a dead process: its status
			// nodes go at once too, rather than a session timeout later.
			if info.Holder.Token != n.cfg.Me.Token {
				n.cfg.Log.Info("taking over the server id from an earlier process of this host that is gone", "earlier", process.Holder(info.Holder).String())
			}
			n.staleOwner.Store(st.EphemeralOwner)
		}
		// Left by an earlier session, or a persistent node nobody owns:
		// replace it, over the version read.
		if err := rc.Delete(ctx, p, st.Version); err != nil && !errors.Is(err, regcenter.ErrNoNode) && !errors.Is(err, regcenter.ErrBadVersion) {
			return registering(err)
		}
		return n.Publish(ctx)
	}
	if err != nil {
		return registering(err)
	}
	return nil
}

// InUse is the error for server id held by a live process elsewhere, h,
// under session: it wraps sentinel and says what to do.
func InUse(sentinel error, id string, h process.Holder, session int64, timeout time.Duration) error {
	return fmt.Errorf("%w: server id %q is held by %s (session 0x%x); give each process its own id, or leave the default (one per process); if that process is gone, its session ends within %v",
		sentinel, id, h, session, timeout)
}

// Unpublish removes the instance node within ctx (at shutdown), so that
// the caps of the others count one instance fewer at once.
func (n *Node) Unpublish(ctx context.Context) {
	rc := n.cfg.RC
	if err := rc.Delete(ctx, layout.Instance(n.cfg.Server), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) && rc.Session().Err() == nil {
		n.cfg.Log.Warn("removing the instance node", "err", err)
	}
}
