// Package book holds this instance's account of a job's items: which run
// here (and the runs beside them under OverlapAllow), the reservations a
// fire takes and puts back, the releases and the waiters for none to run,
// the registration's state, and — in its Ledger — what each item is owed
// here. Package job asks it at every step of a fire that reserves, owes,
// pays or hands over a run; the decisions of a scheduled fire per item are
// fireplan's (Decide), which the book asks and applies under its lock.
//
// It owns:
//
//   - the Book (book.go): the registration (the session registered under,
//     stopping, removed, what a leave gave up), the runs (the items
//     reserved or running, a trigger queued, the idle waiters, the
//     scheduled fires in flight), the fires each execution stands for
//     (Started, LatestThrough), the waits on owed items running elsewhere;
//   - the reservations (reserve.go): a scheduled fire's (ReserveFire, and
//     Undo for a fire whose proof failed), every other run's (Reserve),
//     the runs alongside under OverlapAllow, a plain fire that follows a
//     run whose completion is being written (Writing, After), and the
//     releases (Release);
//   - the debts (debts.go): noting a missed fire, the fire missed while
//     disconnected, a make-up run's narrowing and the debts it absorbs,
//     the debts taken for runs, what a completion paid, and what a leave
//     hands over;
//   - the Ledger (ledger.go): per item the span of fires owed, the latest
//     fire run or owed here, whether this instance wrote its misfire node;
//     and the earliest fire skipped while disconnected;
//   - what it is told of a job (Job, given with each call that reads it)
//     and of a run (Kind, Ran).
//
// The lock discipline. The Book's lock is taken only in the Book's
// methods, the Ledger's only in ledger.go. The Ledger's methods may be
// called with the Book's lock held, never the reverse: a reservation
// that takes an item's debt and reserves the item in one step holds the
// Book's lock around both. What the Book calls under its lock from its
// caller — Options.OnIdle, a run's replace (Started), a wait's cancel
// (WaitRemote), Paid's run — must not call the Book.
//
// It may import the standard library, regcenter (a registration's
// Session) and job/internal/fireplan; nothing of package job. It starts
// one goroutine, WaitFiring's (for a context that may end), which ends
// when the fires in flight do.
package book
