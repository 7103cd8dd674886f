// Package process holds the process behind a server id. An instance's
// node (layout.Instance) names the process that holds the id: its host,
// its pid and a token drawn when the scheduler was made. A scheduler that
// finds the id held by another session tells, from those, its own earlier
// life (the same token: a session lost and replaced), a dead earlier
// process on this host (the same host, a pid that is gone or is now its
// own), from a live process elsewhere, which package job refuses at once
// with ErrServerIDInUse rather than waiting a session timeout for a node
// that will not go.
//
// It owns:
//
//   - the Holder (holder.go): who a scheduler is (This), the tokens
//     (NewToken), whether a holder found is an earlier life of this one
//     (EarlierLifeOf), and the default server id (DefaultServerID).
//
// It may import the standard library and job/internal/placement (the
// instance node's Holder, and what a server id is); nothing of package
// job. It keeps no state but the process's token, drawn once, and starts
// nothing.
package process
