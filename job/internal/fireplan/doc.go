// Package fireplan holds the decisions of a scheduled fire that need no
// registry and no clock of their own: pure functions of the schedule, the
// time, and what this instance knows of an item (the run holding it here,
// the fires it owes, what its previous owner left undone). Package job
// gathers those facts under its locks, asks here what to do, and applies
// the answer; this package keeps no state and starts nothing.
//
// It owns:
//
//   - the schedule's time arithmetic a fire needs (schedule.go): when a
//     fire is dispatched ahead of its time, the latest fire due by a
//     moment, the fire before a moment, the latest fire a make-up run
//     stands for;
//   - what a scheduled fire does with one item (item.go): run it as a plain
//     fire, run it as a make-up run since an earlier fire it owes, run it
//     beside a run still going, or leave it — already run here or on its
//     previous owner, or busy, and then which fires the item is owed;
//   - what an item's completed record says ran (cover.go): the runs of
//     covered fires a completion adds its run to, and the fires of a debt
//     that are still owed once the record is read;
//   - what an item newly held here owes (inherited.go): the earliest fire
//     its record and its previous owner's debt leave undone; and how a
//     fire's items group into runs of consecutive items of one fire (a
//     range job's calls);
//   - what a run of a fire's items stands for (run.go): the fire an item's
//     run starts at, the earliest of a fire's runs, and the latest fire a
//     run (an item's, a range's) may have run already on the previous
//     owner.
//
// It may import only the standard library.
package fireplan
