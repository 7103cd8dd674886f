// Package schedule holds the time arithmetic of a job's schedule: pure
// functions of its cron, its time zone and its calendar, and of the times
// asked. Package job reads a Config, hands the fields concerned here as
// plain values (a spec, a *time.Location, a Calendar), and makes the
// answers its own — a CronError or a problem's words become a config
// error, ErrEnded and ErrNoFireWithinHorizon become job's sentinels. This
// package reads no clock (every time is an argument), keeps no state but
// a CalendarSchedule's count of its limit's fires, and starts nothing.
//
// It owns:
//
//   - the cron (cron.go): ParseCron, which refuses time zone prefixes and
//     fields that match nothing, makes "@every" an Every (the same phase
//     on every instance) and a cron at set hours fire once when clocks
//     fall back; and which weekdays a cron fires on;
//   - the days excluded (exclude.go): ParseExclude and its Days;
//   - the calendar (calendar.go): Calendar, its fields; CalendarSchedule,
//     a cron with a calendar applied, whose next fire is found in bounded
//     work within HorizonYears, and whose jitter every instance computes
//     the same (Delay); NeverFires, a calendar that leaves its cron no
//     fire;
//   - a fire's time before jitter (nominal.go): NominalFire and its
//     inverse JitteredFire, by which a dependent job's fire is matched to
//     its parents' fires of the same nominal time, whatever their jitters;
//   - a starting deadline at a moment (deadline.go): Deadline, which of a
//     make-up run's fires it drops as expired, which as perhaps run
//     already, and where the run starts then, or that it settles;
//   - the calendar's times and counts (times.go): ParseTime, the times a
//     document writes; CountFires, a bounded count of a schedule's fires.
//
// It may import the standard library, robfig/cron and internal/docsubset
// (its quoting of a value in a message); nothing of package job. A
// CalendarSchedule owns its lock, a leaf: it calls only its cron under it.
package schedule
