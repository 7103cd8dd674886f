// Package admin reads and steers a running shardjob cluster through
// ZooKeeper: the operator's side of the node layout in internal/layout. The
// shardjob command (cmd/shardjob) and the SDK's HTTP handler
// (jobhttp.NewHandler) are two faces of this one library.
//
// Reading never changes anything. Every operation writes only the nodes an
// operator is meant to write — server flags, the job-wide disabled-items
// list, the config node — and the instances react to them live: a disabled
// server loses its items at the next fire, a paused one stops firing, a
// trigger runs the items once now, a changed config is applied by every
// instance, a deleted config makes every instance leave the job.
//
// The package stands above package job, which never imports it. What it
// needs to know about a job's configuration comes through a [Codec]. Both
// faces decode config documents with [JobCodec] and write JSON with
// [WriteJSON], so they accept and answer the same.
package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/internal/suggest"
	"github.com/shardjob/shardjob/regcenter"
)

// Sentinel errors; every error returned by this package for these
// conditions wraps one, so callers can test them with errors.Is.
var (
	// ErrUnknownJob means the namespace has no job of that name.
	ErrUnknownJob = errors.New("unknown job")
	// ErrUnknownServer means the server is not registered in the job (or,
	// for an operation on every job, in any job).
	ErrUnknownServer = errors.New("unknown server")
	// ErrInvalid means an argument is malformed: a config document that does
	// not decode, an item outside the job's range, an empty item list.
	ErrInvalid = errors.New("invalid input")
	// ErrNotOnline means the operation needs an online instance (its status
	// node exists) and there is none.
	ErrNotOnline = errors.New("not online")
	// ErrStillOnline means instances did not leave the job within the time
	// allowed.
	ErrStillOnline = errors.New("instances still online")
	// ErrConflict means the node changed under the operation too often to
	// apply it; trying again normally succeeds.
	ErrConflict = errors.New("concurrent change")
	// ErrHasDependents means the job is a parent of others (their after:
	// names it): removing it would skip their every fire. Remove refuses
	// it unless forced.
	ErrHasDependents = errors.New("other jobs run after it")
)

// Config is what this package needs to know of a job's configuration,
// decoded from the job's config node by a [Codec].
type Config struct {
	Name               string `json:"name"`
	Cron               string `json:"cron"`
	TimeZone           string `json:"timeZone,omitempty"`
	ShardingTotalCount int    `json:"shardingTotalCount"`
	Failover           bool   `json:"failover"`
	Unmonitored        bool   `json:"unmonitored,omitempty"`
	Disabled           bool   `json:"disabled"`
	Description        string `json:"description,omitempty"`
	// PausedUntil and PauseNote are the config's pause (job.Config's).
	PausedUntil time.Time `json:"-"`
	PauseNote   string    `json:"-"`
	// After lists the jobs this one runs after (job.Config's).
	After []string `json:"-"`
	// Next returns the first fire strictly after t, or the zero time if the
	// schedule never fires again. Nil means unknown.
	Next func(t time.Time) time.Time `json:"-"`
	// NextFire is Next with the reason when there is no next fire
	// (job.Config.NextFireAfter: job.ErrScheduleEnded,
	// job.ErrNoFireWithinHorizon). Nil means unknown.
	NextFire func(t time.Time) (time.Time, error) `json:"-"`
	// Document is the canonical YAML document to store in the config node.
	Document []byte `json:"-"`
}

// Codec decodes and validates a config document. It returns an error
// describing every problem (with the key and line where known) when the
// document is not a valid job configuration, and gives up when ctx ends.
// [JobCodec] decodes as the instances do; tests may pass a codec of their
// own.
type Codec func(ctx context.Context, data []byte) (Config, error)

// Admin reads and steers the jobs of one namespace. It is safe for
// concurrent use.
type Admin struct {
	rc    regcenter.Center
	codec Codec
	now   func() time.Time

	// configs keeps each job's decoded config node by its document, and
	// its next fire, so that a read of an unchanged job costs a lookup
	// (see decodeCached).
	configsMu    sync.Mutex
	configs      map[string]*cachedConfig
	configsBytes int // the sizes of their documents
}

// New returns an Admin working through rc, decoding config nodes with
// codec. rc's namespace is the one administered.
func New(rc regcenter.Center, codec Codec) *Admin {
	return &Admin{rc: rc, codec: codec, now: time.Now}
}

// Namespace returns the administered namespace root, e.g. "/shop", when the
// registry center can tell, else "".
func (a *Admin) Namespace() string {
	if n, ok := a.rc.(interface{ Namespace() string }); ok {
		return n.Namespace()
	}
	return ""
}

func (a *Admin) decode(ctx context.Context, data []byte) (Config, error) {
	if a.codec == nil {
		return Config{}, errors.New("admin: no config codec")
	}
	return a.codec(ctx, data)
}

// unknownJob builds the ErrUnknownJob error for job, with the namespace's
// job nearest to it when one is close: a mistyped name says what was meant.
func (a *Admin) unknownJob(ctx context.Context, job string) error {
	hint := ""
	if names, err := a.jobNames(ctx); err == nil {
		if s := suggest.Nearest(job, names); s != "" && s != job {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
	}
	if ns := a.Namespace(); ns != "" {
		return fmt.Errorf("%w %q in namespace %s%s", ErrUnknownJob, job, ns, hint)
	}
	return fmt.Errorf("%w %q%s", ErrUnknownJob, job, hint)
}

// checkName refuses names that cannot be a job or server node.
func checkName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("%w: %s name is empty", ErrInvalid, kind)
	}
	if strings.ContainsAny(name, "/\x00") || name == "." || name == ".." || strings.HasPrefix(name, ".") {
		return fmt.Errorf("%w: %s name %q is not a node name", ErrInvalid, kind, name)
	}
	return nil
}

// eachErr runs fn(0..n-1) with at most limit calls at once
// (parallel.Each) and returns the first error by index.
func eachErr(n, limit int, fn func(i int) error) error {
	errs := make([]error, n)
	parallel.Each(n, limit, func(i int) { errs[i] = fn(i) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
