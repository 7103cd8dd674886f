package instance

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// PutOnDrainList puts server on the namespace's drain list; on it already is not
// an error. The server id is the caller's to check.
func PutOnDrainList(ctx context.Context, rc regcenter.Center, server string) error {
	if err := rc.EnsurePath(ctx, layout.DrainList); err != nil {
		return fmt.Errorf("drain %s: %w", server, err)
	}
	if _, err := rc.Create(ctx, layout.Drain(server), nil, regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return fmt.Errorf("drain %s: %w", server, err)
	}
	return nil
}

// TakeOffDrainList takes server off the drain list; off it already is not an
// error.
func TakeOffDrainList(ctx context.Context, rc regcenter.Center, server string) error {
	if err := rc.Delete(ctx, layout.Drain(server), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return fmt.Errorf("undrain %s: %w", server, err)
	}
	return nil
}

// DrainList lists the servers on the drain list, sorted.
func DrainList(ctx context.Context, rc regcenter.Center) ([]string, error) {
	kids, err := rc.Children(ctx, layout.DrainList)
	if errors.Is(err, regcenter.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(kids)
	return kids, nil
}
