package jobfile

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/sharding"
)

// ErrJobExists means a job of that name is in the namespace already: its
// node exists (a running job, one defined at run time, or one being
// removed).
var ErrJobExists = errors.New("jobfile: the job exists")

// ErrNotDefinable means a job's type cannot be defined at run time: only
// script and HTTP jobs can, since a Go handler cannot be sent over the
// wire.
var ErrNotDefinable = errors.New("jobfile: only script and http jobs can be defined at run time")

// DecodeDefinition decodes and checks a job definition: one job's YAML
// document, with the keys of one entry of a job file's jobs: list (see
// [job.DecodeSpec]). It is decoded by the job file's decoder, and its
// script: or http: section and its error handler are built as [Build]
// builds them (without side effects), so a bad definition gets the error a
// job file would get; its sharding strategy must be registered in this
// process, as a scheduler's Add requires. Only types script and http are accepted
// ([ErrNotDefinable]). Errors wrap [job.ErrInvalidConfig], [ErrInvalidJob]
// or [ErrNotDefinable].
//
// JSON with the same keys is YAML too, and is accepted as it is.
func DecodeDefinition(ctx context.Context, data []byte) (job.Spec, error) {
	sp, err := job.DecodeSpec(ctx, data)
	if err != nil {
		return job.Spec{}, err
	}
	if t := sp.TypeOrDefault(); t != job.TypeScript && t != job.TypeHTTP {
		return job.Spec{}, fmt.Errorf("%w: job %q has type %s, which runs a Go handler compiled into the program: give type: script or type: http with its section", ErrNotDefinable, sp.Name, t)
	}
	if _, err := sharding.Lookup(sp.Config.WithDefaults().ShardingStrategy); err != nil {
		return job.Spec{}, fmt.Errorf("%w: job %q: %w", job.ErrInvalidConfig, sp.Name, err)
	}
	if err := Check([]job.Spec{sp}); err != nil {
		return job.Spec{}, err
	}
	return sp, nil
}

// Define stores a new job in rc's namespace from its definition (see
// [DecodeDefinition]): the document as given in the job's definition node,
// and its config in the job's config node, in one transaction. Nothing runs
// it until an instance follows the namespace's definitions ([Follow]). A
// bad definition changes nothing and is returned with the decoder's error;
// a job of that name already in the namespace is [ErrJobExists].
func Define(ctx context.Context, rc regcenter.Center, data []byte) (job.Spec, error) {
	sp, err := DecodeDefinition(ctx, data)
	if err != nil {
		return job.Spec{}, err
	}
	cfg, err := sp.Config.Encode()
	if err != nil {
		return job.Spec{}, err
	}
	p := layout.Job(sp.Name)
	err = rc.Multi(ctx,
		regcenter.CreateOp{Path: p.Root()},
		regcenter.CreateOp{Path: p.Config(), Data: cfg},
		regcenter.CreateOp{Path: p.Definition(), Data: data},
	)
	if errors.Is(err, regcenter.ErrNodeExists) {
		return job.Spec{}, fmt.Errorf("%w: %q (remove it first to define it anew)", ErrJobExists, sp.Name)
	}
	if err != nil {
		return job.Spec{}, fmt.Errorf("jobfile: defining job %q: %w", sp.Name, err)
	}
	return sp, nil
}
