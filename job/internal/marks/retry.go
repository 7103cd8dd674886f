package marks

import (
	"context"
	"errors"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// NoteRetry writes item's retry node (layout.Retry): failed attempts of
// fire failed, its owner about to wait for the next. Whoever takes the
// fire over after a crash reads it (ReadRetry) and continues the count;
// the fire's completion deletes it. A set, or a create the first time:
// one round trip once the node exists.
func NoteRetry(ctx context.Context, rc regcenter.Center, paths layout.Job, item int, fire time.Time, failed int) error {
	p := paths.ItemNode(item, layout.Retry)
	data := stored.Retry{Fire: fire.UnixMilli(), Failed: failed}.Marshal()
	for range 3 {
		_, err := rc.Set(ctx, p, data, -1)
		if !errors.Is(err, regcenter.ErrNoNode) {
			return err
		}
		_, err = rc.Create(ctx, p, data, regcenter.Persistent)
		if !errors.Is(err, regcenter.ErrNodeExists) {
			return err
		}
	}
	return errors.New("marks: the retry node came and went three times while it was written")
}

// ReadRetry returns the failed attempts item's retry node names for fire
// (0: none, or the node names another fire). A node that does not decode
// is reported (reshard.ReadDebt's reporter) and read as none.
func ReadRetry(ctx context.Context, rc regcenter.Center, paths layout.Job, item int, fire time.Time,
	report func(p string, st regcenter.Stat, data []byte, msg string, args ...any)) (int, error) {
	p := paths.ItemNode(item, layout.Retry)
	data, st, err := rc.Get(ctx, p)
	if errors.Is(err, regcenter.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	m, err := stored.DecodeRetry(data)
	if err != nil {
		report(p, st, data, "garbage in retry node; its fire's attempts start again", "item", item, "err", err)
		return 0, nil
	}
	if m.Fire != fire.UnixMilli() {
		return 0, nil
	}
	return m.Failed, nil
}
