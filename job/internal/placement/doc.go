// Package placement holds the namespace's load table and the placement of
// a job's items on instances: which server holds how many units of every
// job, the instances that may take them, and the commit of a reshard's
// assignment together with the table's entry that says the same. Package
// job decides when a job reshards and builds its part of the transaction
// (its fence, its assignment nodes); this package computes the assignment
// against the whole namespace (sharding.Place) and commits it.
//
// It owns:
//
//   - the load table (table.go): one entry per job, its units per server
//     and those unplaced, replaced whole, never adjusted by differences;
//     the order servers joined in; its codec, which refuses a garbage
//     table with ErrTableGarbage (job's, the same value);
//   - what placement reads of the instances (view.go): an instance's node
//     (Instance, its Holder) and its codec, the drain list and the offline
//     marks (Exclusions), the live instances (View);
//   - the Placer (placer.go): the reshards and repairs queued by one
//     scheduler, committed in as few transactions as the size limit
//     allows, each job computed against the running result, the table
//     written over the version read, and remembered with the node's
//     identity so that an unchanged node is not decoded again;
//   - the rebuild (rebuild.go): a missing or garbage table rebuilt from
//     the assignment nodes, a bounded number of reads at a time, resumed
//     across commits, written as soon as it is complete;
//   - the books (books.go): the pass over the table that takes out the
//     jobs gone and repairs the
//     entries crediting servers not live (ReviewBooks), a removed job's
//     entry released (ReleaseUnits), a job's units (JobUnits);
//   - the namespace as operators see it (namespace.go): ReadNamespace,
//     Rebalance and FlagReshard, reached from the CLI and the HTTP API
//     through internal/jobhook, which package job fills in;
//   - the reads of an item list node (items.go).
//
// The lock discipline. The Placer owns its lock, over the requests
// queued, taken only in Place and calling nothing under it; a commit runs
// outside it, by whichever caller of Place takes the Placer's turn, and
// calls only the registry and the requests' Ops, which must not call the
// Placer.
//
// It may import the standard library, regcenter, sharding, internal/layout,
// internal/jobhook (the types of the operator's reads), internal/docsubset,
// internal/parallel and job/internal/stored; nothing of package job. It
// starts nothing that outlives a call: a commit runs on a caller of Place,
// and a rebuild's reads (internal/parallel) end before it returns.
package placement
