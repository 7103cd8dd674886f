// Package job runs sharded cron jobs across many instances, coordinated
// through a registry (ZooKeeper, etcd, or an etcd member inside the
// process) in the manner of Apache ElasticJob-Lite.
//
// An application implements [Job] (or wraps a function with [SimpleFunc]),
// describes each job with a [Config] — a cron schedule, a number of
// sharding items, a sharding strategy, failover and misfire policies — and
// adds it to a [Scheduler] built on a [regcenter.Center]:
//
//	import _ "github.com/shardjob/shardjob/regcenter/zookeeper" // or regcenter/etcd: the registry's package
//
//	rc, err := regcenter.Open(ctx, regcenter.Config{Servers: []string{"zk1:2181"}, Namespace: "billing"}) // or Etcd: ...
//	s, err := job.NewScheduler(rc, job.WithServerID("billing-7"))
//	err = s.Add(ctx, job.Config{Name: "invoices", Cron: "0 */5 * * * *", ShardingTotalCount: 8}, myJob)
//	err = s.Start(ctx)
//	defer s.Shutdown(ctx)
//
// Configs can also come from YAML: a job file (package jobfile, whose
// jobs are decoded by [DecodeConfigTree]) or the document stored in the
// registry ([DecodeConfig]); every field is validated, and bad input is
// refused with an error that names it.
//
// # What the scheduler guarantees
//
// Every instance of a job runs the same schedule. At each fire, each item
// runs on exactly one instance: the one the leader's last reshard assigned
// it to. An item never runs on two instances at once (an ephemeral running
// mark per item, created in one transaction with the proof that the
// instance's assignment is current), and a fire is never lost: fires an
// item could not run — it was still busy, its instance died, the registry was
// unreachable — are made up by one later run that stands for all of them
// ([ShardingContext.Through]), on this instance or, with failover, on
// another. docs/guarantees.md states the invariants, and docs/evidence.md
// how the tests and the chaos harness check them.
//
// # The life of a fire
//
// A fire passes through stages, each in a file named after it: the trigger
// (job/internal/trigger: dispatch each fire a lead ahead of its time,
// WithFireLead), fire.go
// (may this instance fire), assignment.go (which items, job/internal/assigned's
// Source: assumed from the previous fire and proved in the marking transaction or, for an
// unmonitored job, by watches, or read fresh, resharding first when one is
// due: job/internal/reshard, placed across the namespace by job/internal/placement),
// the book (reserve the items in memory, split plain runs from make-up
// runs: job/internal/book), then job/internal/firing's Firer, which takes
// the fire as a value: the running marks (made by job/internal/marks,
// which hands back each item it cannot mark), the runs (not before the
// fire's time; each run's attempts, listeners, span and retries:
// job/internal/execute; the user's Job called through executor.go), the
// make-up runs (the misfire ledger is the book's), the completer (record
// what ran, in group commits: job/internal/completion; the marks' and
// records' values are job/internal/stored's, the records known here and
// their reads job/internal/records').
// The runner's state is held in parts, each in the file of the code that
// changes it or in a room under job/internal whose doc says what it owns
// (docs/design.md, "The runner's parts"); those a job uses only once it
// works (prepares, fires, leads, claims, backfills or stops) are made
// together at their first use (active.go), so that an idle job holds
// none. The
// leader's duties, resharding, failover and the operator flags are rooms'
// (job/internal/leader, reshard, failover, flags), wired in leader.go,
// reshard.go, failover.go and flags.go; shutdown and hand-over in stop.go, alerts for
// late and missed runs in alert.go and alertbook.go (their bookkeeping and
// the namespace's checker in job/internal/alert). The design is written down in docs/design.md.
package job
