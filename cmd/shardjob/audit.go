package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/shardjob/shardjob/history"
)

var auditHelpLine = strings.TrimSpace(`
Audit trail (who did what, kept in the history database):
  audit [--since 24h] [--until T] [--who NAME] [--job JOB] [--server S] [--op OP] [--via TOOL] [--limit N] [--before C]
                              the operations done through the HTTP API, the console, the dispatcher's API
                              and this command, refused ones too, newest first (no registry needed)
  Steering commands write to the trail when a history database is given (--history-dsn or
  SHARDJOB_HISTORY_DSN): who (--as NAME, default the operating system user), the operation and
  its target, when, the host, and the result. When the entry cannot be written the operation is
  not performed.`)

// auditOp is the name a steering command has in the audit trail, ""
// for a command that changes nothing.
func auditOp(cmd *command, pos []string) string {
	if cmd.name == "config" {
		if len(pos) > 0 && pos[0] == "set" {
			return "config"
		}
		return ""
	}
	return cmd.audit
}

// auditTarget is the job, server and items a steering command names.
func auditTarget(cmd *command, pos []string, o *options) (job, server, items string) {
	job, server = o.job, o.server
	switch cmd.name {
	case "trigger", "remove", "backfill":
		job = pos[0]
	case "config":
		job = pos[1]
	case "disable-item", "enable-item":
		job, items = pos[0], strings.Join(pos[1:], ",")
	case "disable", "enable", "pause", "resume", "shutdown", "drain", "undrain":
		server = pos[0]
	}
	return job, server, items
}

// auditConfigured reports whether the command is to write the audit
// trail: a history database is named by flag or environment.
func auditConfigured(o *options, set map[string]bool) bool {
	return set["history-dsn"] || set["history-driver"] || os.Getenv("SHARDJOB_HISTORY_DSN") != ""
}

// auditWho is who runs the command: --as, else the operating system user.
func auditWho(o *options) string {
	if o.as != "" {
		return o.as
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

// auditHost is where the command runs.
func auditHost() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown host"
	}
	return h
}

// errAuditUnwritable refuses a steering command whose audit entry cannot
// be written.
var errAuditUnwritable = errors.New("not performed: the audit trail cannot be written")

// audited runs a steering command between its audit entry's start and
// end. It writes nothing when no history database is named. When the
// entry cannot be written the command is not run; when its end cannot be
// written the command's own result stands and a warning says so.
func audited(e *env, cmd *command, pos []string, set map[string]bool, run func() error) error {
	op := auditOp(cmd, pos)
	if op == "" || !auditConfigured(e.o, set) {
		return run()
	}
	switch e.o.hist.driver {
	case history.DriverSQLite, history.DriverPostgres:
	default:
		return usagef("--history-driver %q: use sqlite or postgres", e.o.hist.driver)
	}
	if e.o.hist.driver == history.DriverPostgres && e.o.hist.dsn == "" {
		return usagef("--history-driver postgres needs --history-dsn (or SHARDJOB_HISTORY_DSN): a connection string")
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), opTimeout)
	defer cancel()
	a, err := history.OpenAuditor(actx, history.Config{Driver: e.o.hist.driver, DSN: e.o.hist.dsn})
	if err != nil {
		return fmt.Errorf("%w: %w", errAuditUnwritable, err)
	}
	defer a.Close()
	job, server, items := auditTarget(cmd, pos, e.o)
	id, err := a.Audit(actx, history.AuditEntry{Who: auditWho(e.o), Op: op, Job: job, Server: server, Items: items,
		Via: "cli", Remote: auditHost()})
	if err != nil {
		return fmt.Errorf("%w: %w", errAuditUnwritable, err)
	}
	runErr := run()
	res, text := history.AuditOK, ""
	if runErr != nil {
		res, text = history.AuditFailed, describe(runErr)
	}
	if err := a.EndAudit(actx, id, "", res, text); err != nil {
		fmt.Fprintf(e.stderr, "shardjob %s: warning: the operation's end could not be written to the audit trail (entry %d stays started): %s\n",
			cmd.name, id, describe(err))
	}
	return runErr
}

// addAuditFlags defines the flags of the steering commands' audit.
func addAuditFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.as, "as", os.Getenv("SHARDJOB_AS"), "who runs the command, as the audit trail names it (env SHARDJOB_AS; default the operating system user)")
	fs.StringVar(&o.hist.driver, "history-driver", envOr("SHARDJOB_HISTORY_DRIVER", history.DriverSQLite), "the history `database` the audit trail is written to: sqlite or postgres (env SHARDJOB_HISTORY_DRIVER)")
	fs.StringVar(&o.hist.dsn, "history-dsn", os.Getenv("SHARDJOB_HISTORY_DSN"), "write the audit trail to this SQLite `file` or PostgreSQL connection string (env SHARDJOB_HISTORY_DSN; none: not audited)")
}

// cmdAudit is "shardjob audit": it reads the audit trail from the history
// database, without the registry.
func cmdAudit(e *env, _ []string) error {
	ctx, o := e.ctx, e.o
	f, err := historyFilter("", o, time.Now())
	if err != nil {
		return err
	}
	rd, err := history.OpenReader(ctx, history.Config{Driver: o.hist.driver, DSN: o.hist.dsn})
	if err != nil {
		return err
	}
	defer rd.Close()
	p, err := rd.QueryAudit(ctx, history.AuditFilter{Who: o.who, Job: o.job, Server: o.server, Op: o.op, Via: o.via,
		Since: f.Since, Until: f.Until, Limit: f.Limit, Before: f.Before})
	if err != nil {
		return err
	}
	if e.json {
		return e.emit(p)
	}
	if len(p.Entries) == 0 {
		e.printf("no audit entries\n")
		return nil
	}
	tw := e.table()
	fmt.Fprintln(tw, "ID\tAT\tWHO\tOP\tTARGET\tFROM\tRESULT\tERROR")
	for _, x := range p.Entries {
		who := x.Who
		if x.Role != "" {
			who += " (" + x.Role + ")"
		}
		var target []string
		names := [3]string{"job", "server", "items"}
		if x.Via == "dispatch" {
			names = [3]string{"worker", "server", "task"}
		}
		for _, t := range []struct{ k, v string }{{names[0], x.Job}, {names[1], x.Server}, {names[2], x.Items}} {
			if t.v != "" {
				target = append(target, t.k+" "+t.v)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", x.ID, when(&x.At), dash(foldForTerminal(who)), foldForTerminal(x.Op),
			dash(foldForTerminal(strings.Join(target, ", "))), foldForTerminal(x.Remote+" via "+x.Via), x.Result, dash(foldForTerminal(x.Error)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printNext(e, p.Next)
}
