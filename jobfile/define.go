package jobfile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
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

// ErrTooManyDefinitions means the namespace holds as many definitions as
// its limit allows (DefineOptions.MaxDefinitions); the error names it.
var ErrTooManyDefinitions = errors.New("jobfile: too many job definitions in the namespace")

// ErrDefinitionTooLarge means a definition's document is larger than its
// limit (DefineOptions.MaxBytes); the error names it.
var ErrDefinitionTooLarge = errors.New("jobfile: job definition too large")

// ErrNotFollowed means no live instance follows definitions of the job's
// type, so nothing would run it (DefineOptions.RequireFollower).
var ErrNotFollowed = errors.New("jobfile: no instance follows definitions of this type")

// Limits on definitions, the defaults of [DefineOptions].
const (
	// DefaultMaxDefinitions is how many jobs defined at run time a
	// namespace may hold by default.
	DefaultMaxDefinitions = 1000
	// DefaultMaxDefinitionBytes is the default size limit of one
	// definition's document.
	DefaultMaxDefinitionBytes = 64 << 10
	// maxAncestors bounds the definitions read to check one definition's
	// dependencies (its parents, theirs, and so on).
	maxAncestors = 256
	// countSlack is how close to the limit on definitions Define starts
	// fencing the count (see DefineWith).
	countSlack = 64
)

// DecodeDefinition decodes and checks a job definition: one job's YAML
// document, with the keys of one entry of a job file's jobs: list (see
// [DecodeSpec]). It is decoded by the job file's decoder, and its
// script: or http: section and its error handler are built as [Build]
// builds them (without side effects), so a bad definition gets the error a
// job file would get; its sharding strategy must be registered in this
// process, as a scheduler's Add requires. Only types script and http are accepted
// ([ErrNotDefinable]). Errors wrap [job.ErrInvalidConfig], [ErrInvalidJob]
// or [ErrNotDefinable].
//
// The jobs it runs after (after:) are not looked at: that needs the
// namespace's other definitions, which [Define] and [Follow] check it
// with, in the same way.
//
// JSON with the same keys is YAML too, and is accepted as it is.
func DecodeDefinition(ctx context.Context, data []byte) (Spec, error) {
	sp, _, err := decodeDefinition(ctx, data, checkBuild)
	return sp, err
}

// checkBuild builds sp as Check does: without side effects.
func checkBuild(sp Spec) (job.Job, error) { return Build(sp, nil, Options{}) }

// decodeDefinition is DecodeDefinition with the build given: Define's
// builds without side effects, a follower's builds the job it adds.
func decodeDefinition(ctx context.Context, data []byte, build func(Spec) (job.Job, error)) (Spec, job.Job, error) {
	sp, err := DecodeSpec(ctx, data)
	if err != nil {
		return Spec{}, nil, err
	}
	if t := sp.TypeOrDefault(); t != TypeScript && t != TypeHTTP {
		return Spec{}, nil, fmt.Errorf("%w: job %q has type %s, which runs a Go handler compiled into the program: give type: script or type: http with its section", ErrNotDefinable, sp.Name, t)
	}
	if _, err := sharding.Lookup(sp.Config.WithDefaults().ShardingStrategy); err != nil {
		return Spec{}, nil, fmt.Errorf("%w: job %q: %w", job.ErrInvalidConfig, sp.Name, err)
	}
	j, err := build(sp)
	if err != nil {
		return Spec{}, nil, err
	}
	return sp, j, nil
}

// registryError is a definition check that could not read the registry:
// a reason to try again, not to refuse the definition.
type registryError struct{ err error }

func (e *registryError) Error() string { return e.err.Error() }
func (e *registryError) Unwrap() error { return e.err }

// readDefinition reads job name's definition from rc: nil, nil when it
// has none.
func readDefinition(ctx context.Context, rc regcenter.Center, name string) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, followOpTimeout)
	defer cancel()
	doc, _, err := rc.Get(rctx, layout.Job(name).Definition())
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, &registryError{fmt.Errorf("jobfile: reading the definition of job %q: %w", name, err)}
	}
	if doc == nil {
		doc = []byte{}
	}
	return doc, nil
}

// checkDefinition is every check a definition passes, the same before
// it is stored ([Define]) and before a follower runs it ([Follow]): it is
// decoded and built as decodeDefinition does (with build), and the jobs it
// runs after are checked with it as one job file's jobs are checked
// together ([job.CheckDependencies]): each must be a job defined at run
// time too (a follower has a definition's parents only if they are
// definitions), decode and build, fire on its schedule, and no cycle may
// form. The parents' definitions, and theirs, are read from rc.
func checkDefinition(ctx context.Context, rc regcenter.Center, data []byte, build func(Spec) (job.Job, error)) (Spec, job.Job, error) {
	sp, j, err := decodeDefinition(ctx, data, build)
	if err != nil || sp.After == "" {
		return sp, j, err
	}
	cfgs := []job.Config{sp.Config}
	seen := map[string]bool{sp.Name: true}
	queue := parentNames(sp.Config)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		if len(seen) > maxAncestors {
			return Spec{}, nil, fmt.Errorf("%w: job %q: after %q: its chain of jobs to run after reaches more than %d definitions",
				job.ErrInvalidConfig, sp.Name, sp.After, maxAncestors)
		}
		doc, err := readDefinition(ctx, rc, name)
		if err != nil {
			return Spec{}, nil, err
		}
		if doc == nil {
			return Spec{}, nil, fmt.Errorf("%w: job %q: after %q: job %q is not defined at run time: a definition runs only after other definitions, which are run where it is (define %q first)",
				job.ErrInvalidConfig, sp.Name, sp.After, name, name)
		}
		psp, err := DecodeDefinition(ctx, doc)
		if err != nil {
			return Spec{}, nil, fmt.Errorf("%w: job %q: after %q: the definition of job %q is refused: %w",
				job.ErrInvalidConfig, sp.Name, sp.After, name, err)
		}
		if psp.Name != name {
			return Spec{}, nil, fmt.Errorf("%w: job %q: after %q: the definition stored for job %q names job %q",
				job.ErrInvalidConfig, sp.Name, sp.After, name, psp.Name)
		}
		cfgs = append(cfgs, psp.Config)
		queue = append(queue, parentNames(psp.Config)...)
	}
	if err := job.CheckDependencies(cfgs, nil); err != nil {
		return Spec{}, nil, err
	}
	return sp, j, nil
}

// parentNames returns the jobs c runs after.
func parentNames(c job.Config) []string {
	var out []string
	for p := range strings.SplitSeq(c.After, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// DefineOptions configure [DefineWith]. The zero value is Define's.
type DefineOptions struct {
	// MaxDefinitions bounds the jobs defined at run time that the
	// namespace may hold: a definition beyond it is refused with
	// ErrTooManyDefinitions. 0 means DefaultMaxDefinitions; negative, no
	// bound. Definitions are counted in an index written with each
	// (layout: /.definitions); one deleted behind the API's back leaves
	// its entry there until the count reaches the limit, when the index
	// is checked against the definitions and such entries are dropped.
	MaxDefinitions int
	// MaxBytes bounds one definition's document: a larger one is refused
	// with ErrDefinitionTooLarge before it is decoded. 0 means
	// DefaultMaxDefinitionBytes; it can be raised up to what a registry
	// node holds (job.MaxConfigBytes).
	MaxBytes int
	// RequireFollower refuses, with ErrNotFollowed, a definition of a
	// type no live instance follows (no instance runs Follow, or none
	// with AllowScript for a script job): nothing would run it. Without
	// it such a definition is stored, and runs once an instance follows
	// its type.
	RequireFollower bool
}

func (o DefineOptions) maxDefinitions() int {
	if o.MaxDefinitions == 0 {
		return DefaultMaxDefinitions
	}
	return o.MaxDefinitions
}

func (o DefineOptions) maxBytes() int {
	if o.MaxBytes <= 0 {
		return DefaultMaxDefinitionBytes
	}
	return min(o.MaxBytes, job.MaxConfigBytes)
}

// Define stores a new job in rc's namespace from its definition, with the
// default limits: DefineWith with the zero DefineOptions.
func Define(ctx context.Context, rc regcenter.Center, data []byte) (Spec, error) {
	return DefineWith(ctx, rc, data, DefineOptions{})
}

// DefineWith stores a new job in rc's namespace from its definition: the
// document as given in the job's definition node, and its config in the
// job's config node, in one transaction. Nothing runs it until an
// instance follows the namespace's definitions ([Follow]).
//
// The definition gets exactly the checks a follower makes before it runs
// one (see [DecodeDefinition]; the jobs it runs after, if any, must be
// definitions too, of the same schedule, with no cycle), so that what is
// stored is what a follower can run. A bad definition changes nothing and
// is returned with the decoder's error; a job of that name already in the
// namespace is [ErrJobExists]; the limits of o are [ErrDefinitionTooLarge]
// and [ErrTooManyDefinitions], and with o.RequireFollower a type no live
// instance follows is [ErrNotFollowed].
func DefineWith(ctx context.Context, rc regcenter.Center, data []byte, o DefineOptions) (Spec, error) {
	if max := o.maxBytes(); len(data) > max {
		return Spec{}, fmt.Errorf("%w: the document is %d bytes; a definition may be at most %d (the limit on definitions' size)",
			ErrDefinitionTooLarge, len(data), max)
	}
	sp, _, err := checkDefinition(ctx, rc, data, checkBuild)
	if err != nil {
		var re *registryError
		if errors.As(err, &re) {
			return Spec{}, re.err
		}
		return Spec{}, err
	}
	// A schedule with no fire left (an end in the past, a limit used up)
	// is one every follower's Add refuses: say so now.
	if err := sp.Config.CheckEnded(time.Now()); err != nil {
		return Spec{}, err
	}
	if o.RequireFollower {
		if err := requireFollower(ctx, rc, sp); err != nil {
			return Spec{}, err
		}
	}
	cfg, err := sp.Config.Encode()
	if err != nil {
		return Spec{}, err
	}
	p := layout.Job(sp.Name)
	for cleaned := false; ; {
		// Near the limit the index's version is bumped in the
		// transaction: two definitions stored at once are counted one
		// after the other.
		_, st, err := rc.Get(ctx, layout.Definitions)
		if errors.Is(err, regcenter.ErrNoNode) {
			// The namespace's first definition.
			if err := rc.EnsurePath(ctx, layout.Definitions); err != nil {
				return Spec{}, fmt.Errorf("jobfile: defining job %q: %w", sp.Name, err)
			}
			continue
		}
		if err != nil {
			return Spec{}, fmt.Errorf("jobfile: defining job %q: counting the definitions: %w", sp.Name, err)
		}
		max := o.maxDefinitions()
		if max > 0 && int(st.NumChildren) >= max {
			if cleaned {
				return Spec{}, fmt.Errorf("%w: the namespace holds %d, its limit (remove one first, or raise the limit on definitions)",
					ErrTooManyDefinitions, st.NumChildren)
			}
			if err := dropStaleEntries(ctx, rc); err != nil {
				return Spec{}, fmt.Errorf("jobfile: defining job %q: counting the definitions: %w", sp.Name, err)
			}
			cleaned = true
			continue
		}
		// Far from the limit the count is not fenced, so that definitions
		// stored side by side do not wait on each other: only more than
		// countSlack stored at the same moment could then pass the limit.
		count := regcenter.Op(regcenter.CheckOp{Path: layout.Definitions, Version: -1})
		if max > 0 && int(st.NumChildren) >= max-countSlack {
			count = regcenter.SetOp{Path: layout.Definitions, Version: st.Version}
		}
		err = rc.Multi(ctx,
			count,
			regcenter.CreateOp{Path: p.Root()},
			regcenter.CreateOp{Path: p.Config(), Data: cfg},
			regcenter.CreateOp{Path: p.Definition(), Data: data},
			regcenter.CreateOp{Path: layout.DefinitionEntry(sp.Name)},
		)
		var me *regcenter.MultiError
		switch {
		case errors.As(err, &me) && me.Index == 0 && errors.Is(err, regcenter.ErrBadVersion):
			continue // another definition was stored meanwhile: count again
		case errors.As(err, &me) && me.Index == 4 && errors.Is(err, regcenter.ErrNodeExists):
			// An entry left by a job deleted behind the API's back.
			if err := rc.Delete(ctx, layout.DefinitionEntry(sp.Name), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
				return Spec{}, fmt.Errorf("jobfile: defining job %q: %w", sp.Name, err)
			}
			continue
		case errors.Is(err, regcenter.ErrNodeExists):
			return Spec{}, fmt.Errorf("%w: %q (remove it first to define it anew)", ErrJobExists, sp.Name)
		case err != nil:
			return Spec{}, fmt.Errorf("jobfile: defining job %q: %w", sp.Name, err)
		}
		return sp, nil
	}
}

// dropStaleEntries deletes the index entries of jobs that have no
// definition any more (deleted behind the API's back).
func dropStaleEntries(ctx context.Context, rc regcenter.Center) error {
	names, err := rc.Children(ctx, layout.Definitions)
	if err != nil {
		return err
	}
	errs := make([]error, len(names))
	parallel.Each(len(names), 32, func(i int) {
		ok, _, err := rc.Exists(ctx, layout.Job(names[i]).Definition())
		if err != nil || ok {
			errs[i] = err
			return
		}
		if err := rc.Delete(ctx, layout.DefinitionEntry(names[i]), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
			errs[i] = err
		}
	})
	return errors.Join(errs...)
}

// requireFollower returns ErrNotFollowed unless a live instance follows
// definitions of sp's type.
func requireFollower(ctx context.Context, rc regcenter.Center, sp Spec) error {
	typ := string(sp.TypeOrDefault())
	ids, err := Followers(ctx, rc, sp.TypeOrDefault())
	if err != nil {
		return fmt.Errorf("jobfile: defining job %q: %w", sp.Name, err)
	}
	if len(ids) == 0 {
		how := "an instance follows them with jobfile.Follow or shardjob run --follow"
		if sp.TypeOrDefault() == TypeScript {
			how = "an instance follows them with AllowScript (shardjob run --follow --follow-scripts)"
		}
		return fmt.Errorf("%w: no instance follows %s jobs, so nothing would run job %q (%s)", ErrNotFollowed, typ, sp.Name, how)
	}
	return nil
}

// Followers returns the server ids of the live instances that follow
// definitions of type typ ([Follow] announces them), sorted.
func Followers(ctx context.Context, rc regcenter.Center, typ Type) ([]string, error) {
	ids, err := rc.Children(ctx, layout.FollowersOf(string(typ)))
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading which instances follow %s definitions: %w", typ, err)
	}
	slices.Sort(ids)
	return ids, nil
}

// announce makes the ephemeral node that says this instance follows
// definitions of type typ, replacing one an earlier session of the same
// server left.
func announce(ctx context.Context, rc regcenter.Center, typ Type, server string) error {
	p := layout.Follower(string(typ), server)
	for range 3 {
		_, err := rc.Create(ctx, p, nil, regcenter.Ephemeral)
		if !errors.Is(err, regcenter.ErrNodeExists) {
			return err
		}
		ok, st, err := rc.Exists(ctx, p)
		switch {
		case err != nil:
			return err
		case !ok:
			continue
		case st.EphemeralOwner == rc.Session().ID():
			return nil
		}
		if err := rc.Delete(ctx, p, st.Version); err != nil && !errors.Is(err, regcenter.ErrNoNode) && !errors.Is(err, regcenter.ErrBadVersion) {
			return err
		}
	}
	return fmt.Errorf("jobfile: announcing that %s follows %s definitions: %s keeps being replaced", server, typ, p)
}

// withdraw deletes this instance's announcements, within a few seconds:
// Follow calls it as it returns, when its own context has ended.
func withdraw(rc regcenter.Center, server string, types []Type, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, typ := range types {
		err := rc.Delete(ctx, layout.Follower(string(typ), server), -1)
		if err != nil && !errors.Is(err, regcenter.ErrNoNode) && !errors.Is(err, regcenter.ErrClosed) {
			log.Warn("following job definitions: withdrawing this instance's announcement", "type", string(typ), "err", err)
		}
	}
}
