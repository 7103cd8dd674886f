package script

// ReapTo is Reap with the items owed to d instead of a scheduler's misfire
// nodes, so that a test can see what a reap owes.
var ReapTo = reap
