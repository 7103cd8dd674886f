package reshard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// Request flags a reshard and asks the leader for it at once: the flag
// (necessary) is made with server's id as its data, or, when raised
// already, its data written again; the leader watches the flag's data. A
// job whose tree is gone is not an error: nothing is made.
func Request(ctx context.Context, rc regcenter.Center, paths layout.Job, server string) error {
	ops := paths.FlagReshardOps()
	ops[0] = regcenter.CreateOp{Path: paths.Necessary(), Data: []byte(server)}
	err := rc.Multi(ctx, ops...)
	if errors.Is(err, regcenter.ErrNodeExists) {
		_, err = rc.Set(ctx, paths.Necessary(), []byte(server), -1)
	}
	if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return fmt.Errorf("requesting a reshard: %w", err)
	}
	return nil
}

// OweMisfires records, for each of items, the fire since as a debt in its
// misfire node: whoever is given the item later reads the debt when it
// inherits the item and makes the missed fires up in one run. An item that
// has a debt already keeps the earlier one. The writes go out together;
// the error joins those that failed.
func OweMisfires(ctx context.Context, rc regcenter.Center, paths layout.Job, items []int, since time.Time) error {
	data := stored.Misfire{Since: since.UnixMilli()}.Marshal()
	errs := make([]error, len(items))
	parallel.Each(len(items), reads, func(i int) {
		_, errs[i] = rc.Create(ctx, paths.ItemNode(items[i], layout.Misfire), data, regcenter.Persistent)
		if errors.Is(errs[i], regcenter.ErrNodeExists) {
			errs[i] = nil
		}
	})
	return errors.Join(errs...)
}

// ReadDebt reads item's misfire node: the earliest fire an instance that
// could not run the item (it was running elsewhere, or a reshard left it
// unplaced) owed it, zero when there is none. The node outlives that
// instance, whose debt was otherwise in its memory only. A value that does
// not decode is reported (with msg and args, as report takes them) and
// read as no debt.
func ReadDebt(ctx context.Context, rc regcenter.Center, paths layout.Job, item int, report func(p string, st regcenter.Stat, data []byte, msg string, args ...any)) (time.Time, error) {
	p := paths.ItemNode(item, layout.Misfire)
	data, st, err := rc.Get(ctx, p)
	if errors.Is(err, regcenter.ErrNoNode) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	m, err := stored.DecodeMisfire(data)
	if err != nil {
		report(p, st, data, "garbage in misfire node; ignored", "item", item, "err", err)
		return time.Time{}, nil
	}
	return time.UnixMilli(m.Since), nil
}
