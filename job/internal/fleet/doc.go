// Package fleet holds what a scheduler does to all of its jobs at once:
// their start in batches (Starter), their stop in parallel under one
// deadline (StopAll), and the errors of those that failed (Errors), said
// once per distinct failure so that ten thousand jobs failing alike read
// as one line.
//
// It holds the jobs' runners through a type parameter and knows them only
// by the funcs it is given (a job's name, its start's steps, its stop), so
// that it never needs package job.
//
// It owns:
//
//   - the start of many jobs (start.go): which of them exist in the
//     registry already (Existing, one read of the namespace), the new
//     ones' trees made several to a transaction and the existing ones
//     joined several at a time (Starter's Create and Join), each job's
//     registration after (node by node for one the join left out), a
//     bounded number in flight, and their errors joined;
//   - the stop of many (stop.go): each runner stopped on a goroutine of
//     its own, all waited for, the failures gathered in Errors;
//   - Errors (errors.go): every job's error wrapped with its name, the
//     message grouped by failure, and Jobs, the names it holds.
//
// The lock discipline. Start and StopAll own the locks of their
// collections of errors, taken only in their own bodies; they call the
// funcs they are given under no lock. Errors holds no lock: it is built
// by one goroutine at a time.
//
// It may import the standard library and regcenter; nothing of package
// job. The goroutines Start and StopAll start end before they return.
package fleet
