package health

import (
	"context"
	"errors"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// markOffline writes server's offline mark (layout.OfflineEntry); a mark
// already there is left as it is.
func markOffline(ctx context.Context, rc regcenter.Center, server string) error {
	if err := rc.EnsurePath(ctx, layout.Offline); err != nil {
		return err
	}
	if _, err := rc.Create(ctx, layout.OfflineEntry(server), nil, regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return err
	}
	return nil
}

// clearOffline removes server's offline mark, and reports whether there
// was one.
func clearOffline(ctx context.Context, rc regcenter.Center, server string) (bool, error) {
	err := rc.Delete(ctx, layout.OfflineEntry(server), -1)
	if errors.Is(err, regcenter.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}
