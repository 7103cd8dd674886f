package admin

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// Schedule is an edit of a job's schedule: the fields left nil keep their
// stored value.
type Schedule struct {
	Cron               *string
	ShardingTotalCount *int
}

// SetSchedule changes the cron expression and the item count in the stored
// config of the job called name and leaves every other field as it is. It reads the config
// node, decodes it as the instances do, applies the edit, validates the
// result with the codec (ErrInvalid, naming every problem, and nothing
// written) and writes the canonical document over the version it read: if
// the node changed meanwhile it writes nothing and returns ErrConflict.
// Every instance applies the new config live. It reports whether the
// stored document changed.
func (a *Admin) SetSchedule(ctx context.Context, name string, s Schedule) (Config, bool, error) {
	if s.Cron == nil && s.ShardingTotalCount == nil {
		return Config{}, false, fmt.Errorf("%w: give a cron, a shardingTotalCount or both", ErrInvalid)
	}
	if err := a.requireJob(ctx, name); err != nil {
		return Config{}, false, err
	}
	p := layout.Job(name).Config()
	cur, st, err := a.rc.Get(ctx, p)
	if errors.Is(err, regcenter.ErrNoNode) {
		return Config{}, false, fmt.Errorf("%w %q: it has no config node (it is being removed)", ErrUnknownJob, name)
	}
	if err != nil {
		return Config{}, false, err
	}
	cfg, err := job.DecodeConfigContext(ctx, cur)
	if err != nil {
		return Config{}, false, fmt.Errorf("%w: the stored config of job %q does not decode, so it cannot be edited field by field; replace it whole: %w", ErrInvalid, name, err)
	}
	if s.Cron != nil {
		cfg.Cron = *s.Cron
	}
	if s.ShardingTotalCount != nil {
		cfg.ShardingTotalCount = *s.ShardingTotalCount
	}
	doc, err := cfg.Encode()
	if err != nil {
		return Config{}, false, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	out, err := a.decode(ctx, doc)
	if err != nil {
		return Config{}, false, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(out.Document) > 0 {
		doc = out.Document
	}
	if bytes.Equal(cur, doc) {
		return out, false, nil
	}
	if _, err := a.rc.Set(ctx, p, doc, st.Version); err != nil {
		if errors.Is(err, regcenter.ErrBadVersion) {
			return Config{}, false, fmt.Errorf("%w: the config of job %q changed while it was being edited; look at it again", ErrConflict, name)
		}
		if errors.Is(err, regcenter.ErrNoNode) {
			return Config{}, false, fmt.Errorf("%w %q: its config node was deleted meanwhile", ErrUnknownJob, name)
		}
		return Config{}, false, err
	}
	return out, true, nil
}
