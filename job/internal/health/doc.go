// Package health holds an instance's health as placement sees it: the
// load score it publishes, which the IDLEST placement and preemption read,
// and the offline marks (layout.OfflineEntry) written when its own health
// check or its peers' probes keep failing, which take it out of placement
// like a drain. Package job turns the options on, runs each loop on a
// goroutine of its own, and gives it what it needs of the scheduler: the
// registry, the items running, the publication of the instance's node, the
// events to raise.
//
// It owns:
//
//   - the load (sampler.go, score.go): the machine's load read from /proc
//     (ProcSampler), the score's arithmetic (Score), the preemption delay
//     a score buys (PreemptWait), the score loop that publishes a score
//     when it moved by a point (Scores);
//   - the health check loop (check.go): the failures in a row, the
//     instance's own offline mark written and removed (Checks);
//   - the peer probes (probe.go): the probes of the other instances'
//     health endpoints, the failure counter of each probed instance
//     written over its version, and the peer's offline mark (Probes);
//   - the writes of an offline mark (offline.go);
//   - the loops the options turn on, started together (loops.go: Loops).
//
// It may import the standard library, regcenter, internal/layout and
// job/internal/placement (the instances as placement reads them);
// nothing of package job. Each loop's Run runs on its caller's goroutine
// and returns when the caller's context ends, and the callbacks it is
// given are called on that goroutine. Loops.Start starts the loops turned
// on, each through the spawn it is given (the scheduler's goroutines,
// which Shutdown waits for), ended with the context it is given.
package health
