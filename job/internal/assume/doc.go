// Package assume holds what a fire of a job may take as given without
// reading the registry, each under a lock of its own taken only in its
// file:
//
//   - the assignment (assignment.go): Assignment, this instance's items as
//     read with the versions that prove them, and the checks a fire's
//     transaction sends; Cache, the assumption the next fire may make, the
//     assignment the latest fire held, and the state of the watches that
//     prove an assumption without a request (the runner arms the watches;
//     Cache says what their events change);
//   - the running marks kept across fires (holds.go): Holds, the items
//     whose marks this instance keeps under one session, and the lock a
//     release holds across its transaction;
//   - what a make-up run may repeat (inherited.go): Inherited, the latest
//     fire an item's previous owner may have run unrecorded, noted when a
//     reshard gave this instance the item with a gap in its record.
//
// Package job decides when to assume, prove, hold and release, and does
// the registry round trips; this package makes none, keeps no goroutine,
// and calls back only the functions it is handed, under its lock where
// the method's doc says so.
//
// It may import the standard library, regcenter (the session a state
// belongs to, the check ops) and internal/layout (the nodes checked);
// nothing of package job.
package assume
