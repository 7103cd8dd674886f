// Package jobhook is how the SDK's own packages reach the parts of package
// job that are not its public API: the operator's placement reads and
// verbs (internal/admin, for the CLI and the HTTP API), and the two
// scheduler hooks that job types and error handlers stand on (a misfire
// owed by a killed process group, a job paused after too many failures).
//
// Package job imports this package and fills every variable in its init;
// this package never imports job. A program that links this package
// without job has them nil. The scheduler arguments are a *job.Scheduler,
// which this package cannot name: anything else is an error.
package jobhook

import (
	"context"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// Units is what a job holds in the namespace's load table.
type Units struct {
	// PerServer is how many of the job's items each server holds.
	PerServer map[string]int
	// Unplaced is how many of its items no server may take.
	Unplaced int
}

// Instance is one instance's entry in the namespace's placement, as its
// node and the table say.
type Instance struct {
	// Server is the instance's id.
	Server string
	// Live reports its node present (its session alive).
	Live bool
	// Units is what it holds across the namespace (the load table).
	Units int
	// FaultTolerance and AlarmThreshold are its settings (1 and 0 when it
	// is not live).
	FaultTolerance, AlarmThreshold int
	// Score is its load score, nil when it publishes none; Slots and
	// FreeSlots its executor slots.
	Score            *float64
	Slots, FreeSlots int
	// Draining: on the drain list. Drained: it reported holding nothing
	// and running nothing while on it. Offline: marked offline by failed
	// health checks.
	Draining, Drained, Offline bool
	// Starting: its Start is still registering its jobs.
	Starting bool
	// HealthURL is the health endpoint its peers probe.
	HealthURL string
}

// Namespace is the namespace's placement: K, the units unplaced, and
// every instance live or holding units, sorted by id.
type Namespace struct {
	// Units is K, every unit of the namespace; Unplaced those no instance
	// may take.
	Units, Unplaced int
	// Instances are sorted by server id.
	Instances []Instance
}

// Set by package job's init.
var (
	// ReadNamespace reads the namespace's placement: the load table, every
	// instance's node, the drain list and the offline marks. A garbage
	// table is an error (job.ErrTableGarbage) naming the node.
	ReadNamespace func(ctx context.Context, rc regcenter.Center, log *slog.Logger) (Namespace, error)

	// Rebalance flags a reshard of every job in the namespace: each places
	// its items again before its next fire, which moves units from the
	// most to the least loaded instances until they are within one unit of
	// each other (BALANCED jobs; jobs of a named strategy get that
	// strategy's assignment). It returns how many jobs were flagged.
	Rebalance func(ctx context.Context, rc regcenter.Center) (int, error)

	// ReleaseUnits takes a removed job's entry out of the namespace's load
	// table, and rebalances when that leaves the instances more than one
	// unit apart. It reports whether it rebalanced.
	ReleaseUnits func(ctx context.Context, rc regcenter.Center, job string) (bool, error)

	// JobUnits reads what job holds, from its assignment nodes.
	JobUnits func(ctx context.Context, rc regcenter.Center, job string) (Units, error)

	// OweMisfire records in the registry that item of job name, added to
	// the *job.Scheduler s, owes a run since the fire at since: the item's
	// misfire node, paid with one make-up run by the instance that holds
	// the item at its next fire. An earlier debt already recorded stands.
	// The job must be added (job.ErrUnknownJob) and item in range
	// (job.ErrInvalidConfig); a job that drops missed fires owes nothing.
	OweMisfire func(s any, ctx context.Context, job string, item int, since time.Time) error

	// Pause sets the paused flag of job name on the *job.Scheduler s's
	// server, as `shardjob pause SERVER --job NAME` does: the instance
	// stops firing the job until an operator resumes it. The job must be
	// added (job.ErrUnknownJob).
	Pause func(s any, ctx context.Context, job string) error
)
