// Package dataflow runs typed fetch-and-process jobs: ElasticJob's
// dataflow jobs.
//
// For each item a [Job] fetches a batch of data and, if the batch is not
// empty, processes it. With streaming on it keeps going — fetch, process,
// fetch — until a fetch returns nothing or the item's context ends
// (ElasticJob's streaming.process); with it off, one batch per fire.
//
// An error from Process belongs to its batch: the stream goes on with the
// next fetch, and the execution, once the stream has ended, fails with a
// [BatchErrors] listing the failed batches (the first MaxErrors of them),
// which reaches the job's error handler once per execution. An error from
// Fetch ends the stream at once, since there is nothing to go on with.
// The fire completes when the item's stream ends.
package dataflow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shardjob/shardjob/job"
)

// MaxErrors is how many batch errors a BatchErrors keeps; it counts the
// rest.
const MaxErrors = 16

// ErrFetch is wrapped by the error of a failed fetch.
var ErrFetch = errors.New("dataflow: fetch failed")

// FetchFunc returns the next batch for sc's item; an empty batch ends a
// stream.
type FetchFunc[T any] func(ctx context.Context, sc job.ShardingContext) ([]T, error)

// ProcessFunc processes one batch.
type ProcessFunc[T any] func(ctx context.Context, sc job.ShardingContext, batch []T) error

// Job is a dataflow job over items of type T. Create it with [New].
type Job[T any] struct {
	fetch     FetchFunc[T]
	process   ProcessFunc[T]
	streaming bool
}

// New returns a dataflow job, not streaming (see WithStreaming). fetch and
// process must not be nil.
func New[T any](fetch FetchFunc[T], process ProcessFunc[T]) (*Job[T], error) {
	if fetch == nil || process == nil {
		return nil, errors.New("dataflow: fetch and process are required")
	}
	return &Job[T]{fetch: fetch, process: process}, nil
}

// WithStreaming returns a copy of j with streaming on or off. It is how a
// YAML file's dataflow.streaming key reaches the job (package jobfile).
func (j *Job[T]) WithStreaming(on bool) job.Job {
	c := *j
	c.streaming = on
	return &c
}

// Streaming reports whether j streams.
func (j *Job[T]) Streaming() bool { return j.streaming }

// BatchErrors is the failure of an execution some of whose batches failed.
type BatchErrors struct {
	// Batches is how many batches were processed, Failed how many failed.
	Batches, Failed int
	// Errs are the first MaxErrors errors, in order.
	Errs []error
}

// Error counts the failed batches and lists the kept errors.
func (e *BatchErrors) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	s := fmt.Sprintf("dataflow: %d of %d batches failed: %s", e.Failed, e.Batches, strings.Join(msgs, "; "))
	if e.Failed > len(e.Errs) {
		s += fmt.Sprintf(" (and %d more)", e.Failed-len(e.Errs))
	}
	return s
}

// Unwrap gives errors.Is and errors.As the kept errors.
func (e *BatchErrors) Unwrap() []error { return e.Errs }

// Execute fetches and processes sc's item's data: one batch, or with
// streaming every batch until a fetch returns none or ctx ends.
func (j *Job[T]) Execute(ctx context.Context, sc job.ShardingContext) error {
	be := &BatchErrors{}
	var err error
	for {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
			break
		}
		var batch []T
		batch, err = j.fetch(ctx, sc)
		if err != nil {
			err = fmt.Errorf("%w: item %d: %w", ErrFetch, sc.Item, err)
			break
		}
		if len(batch) == 0 {
			break
		}
		be.Batches++
		if perr := j.process(ctx, sc, batch); perr != nil {
			be.Failed++
			if len(be.Errs) < MaxErrors {
				be.Errs = append(be.Errs, fmt.Errorf("batch %d: %w", be.Batches, perr))
			}
		}
		if !j.streaming {
			break
		}
	}
	if be.Failed > 0 {
		return errors.Join(err, be)
	}
	return err
}
