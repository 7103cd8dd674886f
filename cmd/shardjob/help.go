package main

import (
	"flag"
	"fmt"
	"io"
)

const helpText = `shardjob operates a running shardjob cluster through its registry (ZooKeeper or etcd).

Usage:
  shardjob COMMAND [ARGUMENTS] [FLAGS]      (flags may come before or after the arguments)

Looking:
  jobs                        every job: status, cron, items, instances online, leader, last and next fire
  status JOB                  one job: every server (online, flags, items, running) and every item
                              (last fire, how long it took, its error, misfire and failover state)
  dump JOB                    the job's raw registry nodes with their data, for bug reports
  config get JOB              print the job's config document (YAML)

Steering (instances react at once; nothing restarts):
  disable SERVER [--job JOB]  SERVER takes no items; they move to the others at the next fire
  enable SERVER [--job JOB]   SERVER takes items again
  pause SERVER [--job JOB]    SERVER stops firing; its items are NOT moved and do not run meanwhile
  resume SERVER [--job JOB]   SERVER fires again
  trigger JOB [--server S]    run JOB once now, outside its schedule, on every online server (or S)
  shutdown SERVER [--job JOB] [--wait 30s]
                              the instance SERVER leaves the job cleanly (until it is restarted);
                              waits until it has left (--wait 0: do not wait)
  disable-item JOB ITEM...    keep items out of every fire (ITEM...: 3 5 or 3,5)
  enable-item JOB ITEM...     let them run again
  config set JOB FILE         replace the job's config with FILE ("-": standard input); the document
                              is validated first and never written when invalid; every instance
                              applies it live
  remove JOB [--wait 30s]     stop JOB on every instance, wait until all have left, delete its nodes

Placement (every job's items over every instance of the namespace):
  instances                   every instance: units held, cap, fault tolerance, alarm, load score,
                              drain state and items running; and the units no instance may take
  drain SERVER [--wait 10m]   SERVER takes no new units, lets its running items finish and hands
                              its units to the others; with --wait, returns once it holds nothing
                              and runs nothing (safe to stop the process)
  undrain SERVER              take SERVER off the drain list: it takes units again
  rebalance                   every job places its items again before its next fire

  Without --job, disable/enable/pause/resume act on every job where SERVER is registered, and
  shutdown on every job where it is online. SERVER is the instance's server id (job.WithServerID;
  by default one per process, the host's address and pid: 10.0.0.5@-@4242; status JOB lists them).

Connecting (flags override the environment, which overrides the --config file):
  --zk host:port,...          ZooKeeper servers              env SHARDJOB_REGCENTER_SERVERS
  --etcd host:port,...        etcd endpoints, not with --zk  env SHARDJOB_REGCENTER_ETCD
  --embedded DIR              an embedded member's Dir       env SHARDJOB_REGCENTER_EMBEDDEDDIR
  --pg URL                    PostgreSQL, postgres://u@h/db  env SHARDJOB_REGCENTER_PG (or _URL)
                              (no password in the URL: PGPASSWORD, PGPASSFILE or --digest-file)
  --namespace NAME            namespace (default shardjob)   env SHARDJOB_REGCENTER_NAMESPACE
  --digest-file FILE          digest user:password in FILE   env SHARDJOB_REGCENTER_DIGESTFILE
  --digest user:password      digest; shows in ps, avoid it  env SHARDJOB_REGCENTER_DIGEST
  --tls-ca FILE               TLS, servers verified by FILE  env SHARDJOB_REGCENTER_TLSCAFILE
  --tls-cert, --tls-key FILE  TLS client certificate, key    env SHARDJOB_REGCENTER_TLSCERTFILE, _TLSKEYFILE
  --tls-server-name NAME      name in the servers' certs     env SHARDJOB_REGCENTER_TLSSERVERNAME
  --tls                       TLS with the system's CAs      env SHARDJOB_REGCENTER_TLS
  --config FILE               a job file (jobfile.LoadFile): its regcenter: section
  --timeout 5s                how long to try to reach the registry
  SHARDJOB_REGCENTER_SESSIONTIMEOUT, _CONNECTTIMEOUT, _MAXRETRIES, _BASESLEEP, _MAXSLEEP and
  _TLSINSECURESKIPVERIFY are read too.

Output:
  --output text|json, -o      tables for people (default), or JSON for scripts

Exit codes:
  0  success
  1  the operation failed: registry unreachable, not authorized (wrong or missing --digest),
     the server is not online, instances did not leave within --wait, a timeout
  2  usage error: unknown command or flag, missing or extra argument, invalid input
     (a config document that does not validate, an item out of range)
  3  unknown job or server
  4  shardjob check: a job is late or has not run (a line per problem on standard output)

Errors are one line on standard error, naming what is wrong.
"shardjob help COMMAND" shows one command.
`

func printHelp(w io.Writer) {
	fmt.Fprint(w, helpText)
	fmt.Fprintf(w, "\n%s\n", dispatchHelpLine)
	fmt.Fprintf(w, "\n%s\n", runHelpLine)
	fmt.Fprintf(w, "\n%s\n", consoleHelpLine)
	fmt.Fprintf(w, "\n%s\n", historyHelpLine)
	fmt.Fprintf(w, "\n%s\n", auditHelpLine)
	fmt.Fprintf(w, "\n%s\n", versionHelpLine)
}

func printCommandHelp(w io.Writer, cmd *command) {
	fmt.Fprintf(w, "usage: shardjob %s %s [flags]\n\n%s\n", cmd.name, cmd.args, cmd.summary)
	if cmd.name == "help" {
		return
	}
	var o options
	fs := newFlagSet(cmd, &o)
	fmt.Fprintln(w, "\nflags:")
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		line := "  " + dash + f.Name
		if name != "" {
			line += " " + name
		}
		if def := f.DefValue; def != "" && def != "0s" && def != "false" && f.Name != "o" {
			usage += fmt.Sprintf(" (default %s)", def)
		}
		fmt.Fprintf(w, "%-28s %s\n", line, usage)
	})
	fmt.Fprintln(w, "\nexit codes: 0 ok, 1 operation failed, 2 usage error, 3 unknown job or server, 4 check found a problem")
}
