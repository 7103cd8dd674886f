// Package configcheck holds the checks of a job's config (job.Config):
// each takes the fields it checks as plain values (strings, durations, a
// schedule.Calendar, the parsed cron) and tells each problem to the Add
// it is given, in the order job.Config.Validate reports them, with the
// words of its message. Package job keeps the Config, its sentinels and
// its configError: its Add makes a problem a config error, the Kind its
// sentinel, and places it (the job, the line of the key).
//
// It owns:
//
//   - the limits and defaults of a config (limits.go), which package job
//     names as its exported constants, and the policies' words;
//   - Add and Kind (problem.go), how a problem is told;
//   - the checks of a config's own fields (fields.go): its name, its
//     counts, its misfire and overlap policies, its intervals, its
//     strategy's name;
//   - the items' parameters (items.go): ItemParameters parses
//     "0=a,1=b" with every problem found;
//   - the calendar's fields (calendar.go), with the cron they leave no
//     fire of (schedule.NeverFires), and which field ended a schedule
//     that has no fire left (Ended);
//   - the dependency fields of one job (after.go) and what a parent must
//     be for its dependent (Parent): monitored, its records written at
//     completion, on the same Schedule;
//   - the retry and alert policies' bounds (policies.go).
//
// It may import the standard library, robfig/cron (the parsed cron),
// internal/docsubset (a value quoted in a message), job/internal/schedule
// and job/internal/retry (their limits and arithmetic); nothing of
// package job, and no room that reads the registry. It keeps no state, holds no lock and starts nothing.
package configcheck
