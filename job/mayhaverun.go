package job

// What a make-up run may repeat (ShardingContext.MayHaveRunThrough). The
// registry knows only what the item's record lists; an owner that went
// away may have started fires after it, and their marks went with its
// session. So a run that takes over from such an owner is told the fires
// it stands for up to the latest that owner may have started:
//
//   - a failover run: up to the fire due when the leader queued the
//     departed instance's items, or the last fire of a run cut short by
//     shutdown (failover.Entry.MayHaveRun);
//   - a make-up of a gap an instance finds in an item it gained in a
//     reshard (failover off, a crashed owner): up to the fire before the
//     one that found it (assume.Inherited, job/internal/assume).
//
// Every other run stands for fires nobody ran: a make-up of fires missed
// here, or handed over at a leave, which flushed its records first.
