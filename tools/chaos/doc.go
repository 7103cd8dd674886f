// Command chaos is shardjob's chaos harness: it runs several instance
// processes of a test job against a three-member registry cluster — a
// ZooKeeper ensemble, an etcd cluster with -registry etcd, or one
// PostgreSQL server with -registry postgres —, injects
// faults at random, and checks from an execution log that the invariants of
// the design (I1: an item never executes on two instances at once; I2: no
// fire is lost) held.
//
// # Running it
//
//	go run ./tools/chaos                      # 60 s of faults, then the analysis
//	go run ./tools/chaos -registry etcd       # the same on etcd
//	go run ./tools/chaos -registry postgres   # the same on PostgreSQL
//	go run ./tools/chaos -duration 10m        # the long run
//	go run ./tools/chaos -seed 1234           # replay a fault schedule
//	go run ./tools/chaos -faults zk-restart   # one kind of fault only
//	go run ./tools/chaos -chain 3 -work 400ms # three jobs, each after the one before
//	go run ./tools/chaos -overlap replace -work 600ms -long-every 5 -long 2500ms
//	go run ./tools/chaos -analyse /tmp/shardjob-chaos-…/events.jsonl
//	go test ./tools/chaos -run TestChaosShort -v        # every registry
//	go test ./tools/chaos -run TestChaosShort/etcd -v   # one
//
// On ZooKeeper it needs ZooKeeper and Java (see regcenter/zktest); on etcd
// nothing more (regcenter/etcdtest runs each member as this program
// started again, the etcd server linked in); on PostgreSQL its server
// binaries (internal/testing/pgtest; bash scripts/postgresql.sh ensure). It needs the go command (the
// instance program, ./tools/chaos/instance, is built at start into the run
// directory, with -race when the harness itself was built with -race or
// -race is given). The partition fault needs root and ip(8); without them
// it is skipped with a message. Run `go run ./tools/chaos -h` for every
// flag.
//
// The run directory (a temporary one unless -dir is given) holds the event
// log events.jsonl, each instance's own log (i1.log, …), the registry
// members' data and logs (zk/ or etcd/), and zk-tree-end.txt or
// etcd-tree-end.txt, the job's subtree as the instances left it. It is removed when the run passes, unless -keep.
//
// The output is progress lines, then detail lines (fault counts, no-quorum
// windows, failover delays, every overlap, every lost fire and every
// unexplained duplicate with the executions and faults around it), then one
// summary line, always the last:
//
//	chaos: duration=… instances=… faults=… fires=… executions=… overlaps=… lost=… duplicates=… unexplained_duplicates=… failovers=… failover_p50_ms=… failover_max_ms=… noquorum_fires=… committed=… aborted=… replaced=… unfinished=… stale_overlaps=… frozen_commits=… order_violations=… session_losses=… unexplained_session_losses=… seed=… registry=…
//
// A duplicate is a fire of an item that two committed executions covered. It
// is explained when the earlier execution's instance was down (kill -9),
// frozen past its session or partitioned at some moment between that
// execution's begin and the later one's, or when that execution's process
// lost its registry session in that time (a fault of the registry's members
// can cost every instance its session): its completion may never have been
// recorded, and at least once is the promise then (docs/guarantees.md) — for
// a run whose completion was in flight. With every completion recorded
// (-record-interval 0, the instances' job.WithRecordInterval default) that
// is a run that ended within the group commit's linger and one request
// (completionInFlight) before the crash, or, for a session loss, within
// that and the session timeout before the loss. With records written
// behind (-record-interval above 0) it is a run that ended within the
// interval, plus a run's length and two periods, before it. A duplicate of
// an earlier run is unexplained, its detail lines saying how long before
// the crash the run ended.
//
// session_losses counts the sessions the instance processes logged as lost
// (a session event of type lost). A loss is explained by a fault whose
// window, stretched by the session timeout, holds it: a fault of the
// registry's members for every instance, a fault of an instance (kill9,
// sigstop, sigterm, partition) for that instance only.
// unexplained_session_losses counts the others, each listed in the detail
// lines ("SESSION LOST with no fault"): a session lost for no fault
// injected, which would otherwise hide behind the duplicates it explains.
//
// The exit status is 0 when overlaps, lost and unexplained_duplicates are
// all 0, 1 when they are not, and 2 when the run itself failed (the registry
// would not start, an instance never came up, an interrupt).
//
// # The job and the instances
//
// Every instance (-instances, default 3; ids i1, i2, …) is a separate
// process running one scheduler with one job, "chaos" in namespace "chaos",
// connected through regcenter.Open to the registry of the run:
// -items sharding items (default 6), cron "* * * * * *" (a fire every
// second), failover on, session timeout -session-timeout (default 4 s, the
// most the test ZooKeeper ensemble allows; on etcd, the lease's TTL). An
// execution writes a begin line, works for -work ± -jitter (default 1.5 s
// ± 0.2 s, so every fire of an item finds the previous one still running
// and misfires collapse), honouring its context;
// then it calls ShardingContext.StillOwner and writes an end line only if
// that passed — the end line is the execution's one side effect — or an
// abort line otherwise. SIGTERM makes an instance shut its scheduler down
// gracefully within -shutdown-timeout (default 5 s). Each instance runs in
// its own process group and is killed by the kernel if the harness dies.
//
// With -chain N the instances run N such jobs, "chaos", "chaos-2", …, each
// after the one before (job.Config.After, a one-minute AfterTimeout); job
// k's item i is logged as item k*items+i, so that every invariant below
// holds per job, and the analysis checks one more: a committed run of a
// dependent began only after its parent had completed, on every item,
// every checked fire it stands for (order_violations). A chain's jobs fire
// with a schedule jitter (-fire-jitter, 300 ms by default for a chain): each
// job's fires are delayed by a delay of its own, and a dependent's fire is
// matched to its parent's by the schedule's time before jitter, which is
// the time the log gives every fire. With -overlap
// replace the job's overlap policy is replace, and every -long-every-th
// execution of an instance works -long, past the next fire, which replaces
// it: its replaced line counts its fires as run, so a fire run again after
// it is a duplicate.
//
// # The fault model
//
// After a warm-up (-warmup, default 3 s) the harness injects faults one at a
// time. A first round runs every enabled kind once, in random order, and
// always completes, even past -duration; after it, random kinds follow until
// less than 10 s of -duration is left. Before each fault the harness waits
// 1.5–3 s; after each, it waits until the cluster has recovered (every
// member serving, every instance running, ready and with its status node —
// after a fault of the registry's members, only after a further session
// timeout, so that sessions abandoned meanwhile have expired). Every random
// choice comes from -seed, printed first. The kinds (-faults; by default
// every kind of the registry):
//
//   - kill9: SIGKILL an instance; restart it 2–4 s later.
//   - sigstop: SIGSTOP an instance for a session timeout plus 1–3 s, then
//     SIGCONT: it wakes up after its session expired and others took over.
//   - sigterm: SIGTERM an instance (graceful Shutdown); restart it 1–3 s after
//     it exited.
//   - zk-follower: kill -9 a ZooKeeper follower; start it again 2–4 s later.
//   - zk-leader: kill -9 the ZooKeeper leader (the new leader's election time
//     is logged); start it again 2–4 s later.
//   - zk-restart: stop every member gracefully and start them all again
//     (zktest's RestartAll). The whole of it is logged as a no-quorum window.
//   - etcd-follower: kill -9 an etcd follower; start it again 2–4 s later.
//   - etcd-leader: kill -9 the etcd leader (found through the members'
//     Status API, as the new one is); start it again 2–4 s later.
//   - etcd-restart: stop every etcd member gracefully and start them all
//     again (etcdtest's RestartAll), logged as a no-quorum window.
//   - etcd-wiped: kill -9 an etcd follower, remove it from the cluster,
//     delete its data, add it again as a new member and start it empty
//     (etcdtest's RestartWiped): it catches up from the other two.
//   - pg-kill: kill -9 the PostgreSQL server and its backends; start it
//     again 2–4 s later (crash recovery). The server keeps every commit it
//     acknowledged (pgtest.StartCrashSafe). Logged as a no-quorum window:
//     with one server the registry is gone meanwhile.
//   - pg-restart: stop the PostgreSQL server (fast shutdown) and start it
//     again, logged as a no-quorum window.
//   - pg-frozen: SIGSTOP the PostgreSQL server and its backends past the
//     lease, their connections open; then SIGCONT. A no-quorum window.
//   - etcd-frozen: SIGSTOP an etcd member, the leader or a follower, for a
//     session timeout plus 1–3 s, then SIGCONT: silent to its clients and
//     its peers alike with its connections open, as a member cut off by the
//     network. The clients must give up on it and go on through the others.
//   - partition: cut the last instance off for a session timeout plus 1–3 s.
//     That instance runs inside a network namespace of its own,
//     shardjob-chaos-{harness pid}, joined to the host by a veth pair with
//     addresses 10.213.x.1/30 (host) and 10.213.x.2/30 (inside), x picked
//     unused. The registry listens on 127.0.0.1 only, so the harness
//     forwards TCP from 10.213.x.1 to each member; the instance's server
//     list (ZooKeeper) or endpoints (etcd) name the forwarder. The
//     partition sets the host end of the veth down; the heal sets it up. The namespace and the veth pair are deleted at the end,
//     on error and on Ctrl-C (and a later run deletes those of a harness
//     that was killed).
//
// Every fault is logged with its beginning and end (fault_begin, fault_end)
// and printed with its duration.
//
// # The event log
//
// One file, events.jsonl, opened O_APPEND by the harness and every instance
// process; each event is one JSON line written by one write(2), so lines
// never interleave and a killed process leaves whole lines only. Every line
// has "ev" and "t" (wall clock, Unix ns, read just before the write). The
// instances write proc_start, ready, session (each registry session event;
// "detail" is its type and the session, "err" why a lost one ended),
// begin, end, abort (with "inst", "pid", and for executions "run" — unique
// per execution —, "item", "fire" — ShardingContext.FireTime in Unix ms — and
// "kind") and proc_exit. The harness writes config (the run's parameters),
// measure_start, measure_stop, fault_begin, fault_end, noquorum_begin,
// noquorum_end, signal (every signal it sends), exit (when it reaps an
// instance process: an upper bound on its death), status_up and status_gone
// (its own watch on /chaos/servers/{id}/status saw the node appear or
// disappear) and note. See package eventlog.
//
// # The analysis
//
// An execution is committed (begin and end lines), aborted (begin and
// abort) or unfinished (begin only: the process died, or the log ended).
//
// overlaps (I1) counts pairs of committed executions of one item whose
// intervals [begin, end] intersect. Pairs in different processes are the
// I1 violations proper; a pair within one process would be one too and is
// counted as well (and marked "same process" in the details). Aborted and
// unfinished executions are not counted: the end line is the only side
// effect, and an execution that did not write it did nothing after its last
// successful ownership check — and a process frozen by SIGSTOP cannot react
// before it is woken, so its executions necessarily outlive its session.
// They are still checked, for information: stale_overlaps counts
// uncommitted executions, not frozen by a SIGSTOP at any point of their
// interval, whose interval [begin, abort line or reaping] intersects a
// committed execution of the same item in another process. Those show an
// instance that kept working on an item after another took it over (I1's
// "cancels its running items' contexts before its session could have
// expired") without doing harm. frozen_commits counts committed executions
// whose process was frozen, within the execution, for longer than the
// session timeout: ShardingContext.StillOwner should have failed after such
// a freeze, whether or not another instance took the item meanwhile.
//
// lost (I2) counts (fire, item) pairs, for every whole second from
// measure_start plus the warm-up to measure_stop minus the cool-down
// (-cooldown, default 4 s; measure_stop comes after the faults and a
// -settle period, default 8 s), that no committed execution covers. A fire
// execution covers its own fire; a misfire or failover execution with fire
// time F that began at B covers every fire in [F, B] (misfires collapse:
// the fires missed while an item ran run once, as one execution whose fire
// time is the earliest of them). Trigger executions cover nothing. Fires
// inside a no-quorum window are not checked: they are counted in
// noquorum_fires (and the detail lines say how many of them no execution
// covered anyway). fires is the number of (fire, item) pairs checked.
//
// failovers counts executions of kind failover. failover_p50_ms and
// failover_max_ms are, over those executions, the delay from the departure
// of the item's previous owner to the failover's begin: the previous owner
// is the instance of the item's latest execution elsewhere that began
// before the failover, its departure the latest status_gone of that
// instance after that execution began — the moment the registry ended its
// session (or it left). A failover whose previous owner was not seen to go
// has no delay; the detail lines list every failover with its attribution.
//
// # Limits
//
//   - Times are wall-clock readings of processes on one host: comparable to
//     each other, but a clock step during a run would distort intervals.
//   - The ownership check and the end line are two steps: an instance frozen
//     between them would write a late end line. That window is the job's own
//     (any real side effect has it too) and is microseconds wide here.
//   - Coverage relies on the SDK's FireTime meaning (the earliest fire a
//     misfire or failover run makes up for); it cannot tell which of the
//     fires in [F, B] a collapsed run was really meant for.
//   - Fires are assumed to be whole seconds (the job fires every second).
//   - The harness sees status nodes through its own registry session, so
//     after a fault of the registry a departure may be seen late (status_gone with
//     detail "resync"), making a failover delay look shorter.
//   - An unfinished execution's interval ends when the harness reaped the
//     process, an upper bound on its death.
//   - The no-quorum window of zk-restart spans the whole restart, from the
//     first member's stop to every member serving again, which is somewhat
//     longer than the time without a quorum.
package main
