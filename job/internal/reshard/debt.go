package reshard

import (
	"context"
	"errors"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// OweEarliest records that item owes a run since the fire at since, in its
// misfire node, as a debt left by an instance that died: a node present
// already keeps the earlier of the two fires. A node paid (deleted) or
// changed meanwhile is written again.
func OweEarliest(ctx context.Context, rc regcenter.Center, paths layout.Job, item int, since time.Time) error {
	path := paths.ItemNode(item, layout.Misfire)
	data := stored.Misfire{Since: since.UnixMilli()}.Marshal()
	for {
		_, err := rc.Create(ctx, path, data, regcenter.Persistent)
		if !errors.Is(err, regcenter.ErrNodeExists) {
			return err
		}
		old, st, err := rc.Get(ctx, path)
		if errors.Is(err, regcenter.ErrNoNode) {
			continue // paid meanwhile: create ours
		}
		if err != nil {
			return err
		}
		if m, err := stored.DecodeMisfire(old); err == nil && m.Since <= since.UnixMilli() {
			return nil // an earlier debt stands
		}
		_, err = rc.Set(ctx, path, data, st.Version)
		if errors.Is(err, regcenter.ErrBadVersion) || errors.Is(err, regcenter.ErrNoNode) {
			continue
		}
		return err
	}
}
