// Package flags holds the operator's flags for a job on this server, as
// this instance last read them, and their reading: the children of
// servers/{me} (paused, disabled, shutdown, trigger, and the instance's
// status node) and the job's disabled-items node. Package job decides
// what a flag starts (a pause's and a disable's events, a shutdown's
// leave, a trigger's run), when to read them (the flags watch's kicker,
// the reconcile round's status check) and reads Paused and DisabledItems
// at each fire; this package reads, removes (a trigger taken), restores
// (a status deleted under a live instance) and sets (a pause asked for by
// the stop error handler, through package job's hook) the nodes, with the
// center, paths and server id it is made with (New), and reports a flag's
// change as a value (SetPaused, SetDisabled) for the caller's event.
//
// It owns Flags (flags.go): the paused and disabled flags and the
// disabled items, each an atomic value read and replaced whole, never
// changed in place, so a fire reads them with no lock, as they are at
// that moment; Read and Seen (SeenIn, pure), the flags as read;
// TakeTrigger; RestoreStatus; Pause; ReadDisabledItems.
//
// The lock discipline. It has no lock: each value is an atomic, and a
// read of the registry stores its result with one atomic store.
//
// Registry round trips: Read one (the server's children); TakeTrigger
// one delete; RestoreStatus one create; Pause one create;
// ReadDisabledItems one read.
//
// It may import the standard library, regcenter and internal/layout;
// nothing of package job. It keeps no goroutine and starts nothing.
package flags
