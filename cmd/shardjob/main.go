// Command shardjob operates a running shardjob cluster through its
// registry (ZooKeeper, etcd, or PostgreSQL):
// it lists the jobs and their state, drains, pauses, triggers and shuts
// down servers, disables items, changes a job's config live and removes
// jobs. Run "shardjob help" for the commands, flags and exit codes, and
// see docs/operations.md for a walk through an operator's day.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	// Time zones for computing next fires, whatever the host has installed.
	_ "time/tzdata"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/regcenter"

	// --pg and postgres: postgres://... (or url:) reach a PostgreSQL registry.
	_ "github.com/shardjob/shardjob/regcenter/postgres"
	// --etcd, --embedded, etcd: and embeddedDir: reach etcd.
	_ "github.com/shardjob/shardjob/regcenter/etcd"
	// --zk and servers: reach a ZooKeeper ensemble.
	_ "github.com/shardjob/shardjob/regcenter/zookeeper"
)

// Exit codes.
const (
	exitOK      = 0 // success
	exitFailed  = 1 // the operation failed: registry unreachable, not authorized, not online, timeout
	exitUsage   = 2 // bad command line or invalid input
	exitUnknown = 3 // unknown job or server
	exitAlerts  = 4 // shardjob check: a job is late or has not run
)

// opTimeout bounds the ZooKeeper work of a command once connected (waits
// for instances to leave come on top).
const opTimeout = 30 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// options holds every flag's value.
type options struct {
	zk, etcd, namespace, digest string
	embedded                    string // an embedded etcd member's Dir
	pg                          string // a PostgreSQL registry's URL
	config                      string
	digestFile                  string
	tls                         bool
	tlsCA, tlsCert, tlsKey      string
	tlsServerName               string
	timeout                     time.Duration
	output                      string

	job, server string
	wait        time.Duration
	force       bool // shardjob remove --force

	window time.Duration // shardjob check --window

	bf backfillOptions // shardjob backfill

	hist historyOptions // shardjob history
	as   string         // who runs a steering command, for the audit trail
	who  string         // shardjob audit --who
	op   string         // shardjob audit --op
	via  string         // shardjob audit --via
}

// command is one shardjob command.
type command struct {
	name     string
	args     string // synopsis of the positional arguments
	summary  string
	min, max int // positional argument counts; max -1: unlimited
	flags    []string
	run      func(e *env, args []string) error
	// noZK: the command makes no ZooKeeper connection (e.adm is nil) and
	// takes none of the connection flags.
	noZK bool
	// audit is the command's operation in the audit trail; empty for a
	// command that changes nothing (config: see auditOp).
	audit string
}

var commands []*command

func init() {
	commands = []*command{
		{name: "jobs", summary: "list the jobs: status, cron, items, instances online, leader, last and next fire", run: cmdJobs},
		{name: "status", args: "JOB", min: 1, max: 1, summary: "one job in detail: every server and every item", run: cmdStatus},
		{name: "dump", args: "JOB", min: 1, max: 1, summary: "the job's raw registry nodes, for bug reports", run: cmdDump},
		{name: "config", args: "get JOB | set JOB FILE", min: 2, max: 3, summary: `print the job's config (YAML), or replace it with FILE ("-": stdin), validated first; every instance applies it live`, run: cmdConfig},
		{name: "disable", args: "SERVER", min: 1, max: 1, flags: []string{"job"}, summary: "SERVER takes no items (of --job JOB, or of every job); they move to the others at the next fire", run: serverCmd("disable"), audit: "disable"},
		{name: "enable", args: "SERVER", min: 1, max: 1, flags: []string{"job"}, summary: "undo disable: SERVER takes items again from the next fire", run: serverCmd("enable"), audit: "enable"},
		{name: "pause", args: "SERVER", min: 1, max: 1, flags: []string{"job"}, summary: "SERVER stops firing; its items are not moved and do not run until resume", run: serverCmd("pause"), audit: "pause"},
		{name: "resume", args: "SERVER", min: 1, max: 1, flags: []string{"job"}, summary: "undo pause", run: serverCmd("resume"), audit: "resume"},
		{name: "shutdown", args: "SERVER", min: 1, max: 1, flags: []string{"job", "wait"}, summary: "the instance SERVER leaves the job (--job JOB, or every job) cleanly; waits up to --wait until it has", run: cmdShutdown, audit: "shutdown"},
		{name: "trigger", args: "JOB", min: 1, max: 1, flags: []string{"server"}, summary: "run JOB once now, outside its schedule, on every online server (or on --server S only)", run: cmdTrigger, audit: "trigger"},
		{name: "disable-item", args: "JOB ITEM...", min: 2, max: -1, summary: "keep items out of every fire of JOB (items as 3 5 or 3,5)", run: itemsCmd(true), audit: "disable-items"},
		{name: "enable-item", args: "JOB ITEM...", min: 2, max: -1, summary: "undo disable-item", run: itemsCmd(false), audit: "enable-items"},
		{name: "remove", args: "JOB", min: 1, max: 1, flags: []string{"wait", "force"}, summary: "stop JOB on every instance (waits up to --wait) and delete its nodes; refused while other jobs run after it, unless --force", run: cmdRemove, audit: "remove"},
		{name: "instances", summary: "every instance: units held, cap, alarm, load score, drain state, items running", run: cmdInstances},
		{name: "drain", args: "SERVER", min: 1, max: 1, flags: []string{"wait"}, summary: "SERVER takes no new units and hands its units over; with --wait, returns once it is safe to stop", run: cmdDrain, audit: "drain"},
		{name: "undrain", args: "SERVER", min: 1, max: 1, summary: "take SERVER off the drain list: it takes units again", run: cmdUndrain, audit: "undrain"},
		{name: "rebalance", summary: "every job places its items again before its next fire, evening out the instances' units", run: cmdRebalance, audit: "rebalance"},
		{name: "history", args: "[JOB]", max: 1, flags: []string{"history"}, noZK: true, summary: "the execution history (or, with --events, the job status events), newest first, read from the history database: no registry needed", run: cmdHistory},
		{name: "audit", flags: []string{"history"}, noZK: true, summary: "the audit trail: who did what through the HTTP API, the console, the dispatcher's API and this command, when, from where, and the result; read from the history database (--since, --who, --job, --op, --via, --limit)", run: cmdAudit},
		{name: "backfill", args: "JOB", min: 1, max: 1, flags: []string{"backfill"}, summary: "run JOB's fires from --from to --to (past times) again, as backfill runs on each item's owner at --rate fires a second; --status shows progress, --cancel stops it, --resume goes on", run: cmdBackfill, audit: "backfill"},
		{name: "check", flags: []string{"window"}, summary: "a probe for cron: exits 0 when no job is late or not run (alert: in its config), 4 with a line per problem otherwise", run: cmdCheck},
		{name: "help", args: "[COMMAND]", max: 1, summary: "show this help, or a command's"},
	}
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// valueFlags are the flags that take a value, for finding the command
// among flags written before it.
var valueFlags = map[string]bool{
	"zk": true, "etcd": true, "embedded": true, "pg": true, "namespace": true, "digest": true, "config": true, "timeout": true,
	"digest-file": true, "tls-ca": true, "tls-cert": true, "tls-key": true, "tls-server-name": true,
	"output": true, "o": true, "job": true, "server": true, "wait": true, "window": true, "from": true, "to": true, "rate": true,
	"history-driver": true, "history-dsn": true, "as": true, "who": true, "op": true, "via": true, "since": true, "until": true, "kind": true, "limit": true, "before": true,
}

// findCommand returns the first positional argument and the arguments
// without it.
func findCommand(args []string) (string, []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return args[i+1], append(append([]string{}, args[:i+1]...), args[i+2:]...)
			}
			return "", args
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			name := strings.TrimLeft(a, "-")
			if _, _, hasValue := strings.Cut(name, "="); !hasValue && valueFlags[name] {
				i++ // skip the value
			}
			continue
		}
		return a, append(append([]string{}, args[:i]...), args[i+1:]...)
	}
	return "", args
}

// newFlagSet defines the global flags and those of cmd.
func newFlagSet(cmd *command, o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("shardjob", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if cmd != nil && cmd.noZK {
		fs.StringVar(&o.output, "output", "text", "output `format`: text or json")
		fs.StringVar(&o.output, "o", "text", "short for --output `format`")
		addHistoryFlags(fs, o)
		if cmd.name == "audit" {
			fs.StringVar(&o.who, "who", "", "only entries of this `name`: a token's name, or the user who ran the command")
			fs.StringVar(&o.job, "job", "", "only entries of this `job`")
			fs.StringVar(&o.op, "op", "", "only entries of this `operation` (trigger, disable, drain, config, assign, ...)")
			fs.StringVar(&o.via, "via", "", "only entries that came through this `tool`: http (the API and the console), dispatch (the dispatcher's API) or cli")
		}
		return fs
	}
	fs.StringVar(&o.zk, "zk", "", "ZooKeeper `servers`, comma-separated host:port (env SHARDJOB_REGCENTER_SERVERS)")
	fs.StringVar(&o.etcd, "etcd", "", "etcd `endpoints`, comma-separated host:port, instead of --zk (env SHARDJOB_REGCENTER_ETCD)")
	fs.StringVar(&o.embedded, "embedded", "", "the `dir` of an embedded etcd member on this host, instead of --zk or --etcd: its endpoint and credentials are read from it (env SHARDJOB_REGCENTER_EMBEDDEDDIR)")
	fs.StringVar(&o.pg, "pg", "", "a PostgreSQL registry's `url` (postgres://user@host:5432/db), instead of --zk, --etcd or --embedded; no password in it: use PGPASSWORD, a passfile (PGPASSFILE) or --digest-file (env SHARDJOB_REGCENTER_PG, or SHARDJOB_REGCENTER_URL)")
	fs.StringVar(&o.namespace, "namespace", "", "the `namespace` the jobs live in (env SHARDJOB_REGCENTER_NAMESPACE; default shardjob)")
	fs.StringVar(&o.digest, "digest", "", "digest `credentials` user:password; shows in ps, prefer --digest-file or env SHARDJOB_REGCENTER_DIGEST")
	fs.StringVar(&o.digestFile, "digest-file", "", "read the digest user:password from this `file` (env SHARDJOB_REGCENTER_DIGESTFILE)")
	fs.BoolVar(&o.tls, "tls", false, "connect over TLS; implied by the other --tls-* flags (env SHARDJOB_REGCENTER_TLS)")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "PEM `file` of the CAs that verify the servers (env SHARDJOB_REGCENTER_TLSCAFILE; default: the system's)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM client certificate `file`, with --tls-key (env SHARDJOB_REGCENTER_TLSCERTFILE)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key `file` of --tls-cert (env SHARDJOB_REGCENTER_TLSKEYFILE)")
	fs.StringVar(&o.tlsServerName, "tls-server-name", "", "the `name` the servers' certificates must be valid for (env SHARDJOB_REGCENTER_TLSSERVERNAME; default: each server's host)")
	fs.StringVar(&o.config, "config", "", "a job `file` whose regcenter: section says how to connect")
	fs.DurationVar(&o.timeout, "timeout", regcenter.DefaultConnectTimeout, "how long to try to reach the registry")
	fs.StringVar(&o.output, "output", "text", "output `format`: text or json")
	fs.StringVar(&o.output, "o", "text", "short for --output `format`")
	if cmd != nil && (cmd.audit != "" || cmd.name == "config") {
		addAuditFlags(fs, o)
	}
	if cmd != nil {
		for _, f := range cmd.flags {
			switch f {
			case "job":
				fs.StringVar(&o.job, "job", "", "act on this `job` only (default: every job of the server)")
			case "server":
				fs.StringVar(&o.server, "server", "", "act on this `server` only")
			case "wait":
				fs.DurationVar(&o.wait, "wait", 30*time.Second, "how long to wait for the instances to leave")
			case "force":
				fs.BoolVar(&o.force, "force", false, "remove the job even though other jobs run after it (their fires are then skipped)")
			case "window":
				fs.DurationVar(&o.window, "window", time.Hour, "report the fires raised late within this `duration` before now")
			case "backfill":
				fs.StringVar(&o.bf.from, "from", "", "the range's first `time` (RFC 3339, or a date: its midnight UTC)")
				fs.StringVar(&o.bf.to, "to", "", "the range's last `time`, not after now (RFC 3339, or a date)")
				fs.Float64Var(&o.bf.rate, "rate", 0, "at most this many fires a `second` on each instance (default 10)")
				fs.BoolVar(&o.bf.status, "status", false, "show the backfill's progress")
				fs.BoolVar(&o.bf.cancel, "cancel", false, "stop the backfill after the fires running; its progress stays")
				fs.BoolVar(&o.bf.resume, "resume", false, "go on with a cancelled backfill from its progress")
			}
		}
	}
	return fs
}

// parseArgs parses flags wherever they appear among the positional
// arguments; everything after "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// run is the whole command: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "dispatch" {
		return runDispatch(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "run" {
		return runFile(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "console" {
		return runConsole(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "version" {
		return runVersion(args[1:], stdout, stderr)
	}
	name, rest := findCommand(args)
	if name == "" {
		var o options
		fs := newFlagSet(nil, &o)
		if _, err := parseArgs(fs, rest); errors.Is(err, flag.ErrHelp) {
			printHelp(stdout)
			return exitOK
		}
		fmt.Fprintln(stderr, "shardjob: no command given (run 'shardjob help' for the commands)")
		return exitUsage
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(stderr, "shardjob: unknown command %q%s (run 'shardjob help' for the commands)\n", name, didYouMean(name))
		return exitUsage
	}
	var o options
	fs := newFlagSet(cmd, &o)
	pos, err := parseArgs(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		printCommandHelp(stdout, cmd)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "shardjob %s: %s (run 'shardjob help %s')\n", cmd.name, oneLine(err.Error()), cmd.name)
		return exitUsage
	}
	if cmd.name == "help" {
		if len(pos) == 1 {
			c := lookup(pos[0])
			if c == nil || c.name == "help" {
				fmt.Fprintf(stderr, "shardjob help: unknown command %q%s (run 'shardjob help' for the commands)\n", pos[0], didYouMean(pos[0]))
				return exitUsage
			}
			printCommandHelp(stdout, c)
			return exitOK
		}
		printHelp(stdout)
		return exitOK
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := checkArgs(cmd, pos, &o, set); err != nil {
		fmt.Fprintf(stderr, "shardjob %s: %s\n", cmd.name, err)
		return exitUsage
	}

	if cmd.noZK {
		err = runLocal(cmd, pos, &o, stdout, stderr)
	} else {
		err = connectAndRun(cmd, pos, &o, set, stdout, stderr)
	}
	if err == nil {
		return exitOK
	}
	name = cmd.name
	if cmd.name == "config" {
		name += " " + pos[0]
	}
	fmt.Fprintf(stderr, "shardjob %s: %s\n", name, describe(err))
	return exitCode(err)
}

// checkArgs validates what can be checked before connecting.
func checkArgs(cmd *command, pos []string, o *options, set map[string]bool) error {
	usage := fmt.Sprintf("usage: shardjob %s %s", cmd.name, cmd.args)
	switch {
	case len(pos) < cmd.min:
		missing := strings.Fields(cmd.args)
		what := "an argument"
		if len(pos) < len(missing) {
			what = missing[len(pos)]
		}
		if cmd.name == "config" && len(pos) == 0 {
			what = "get or set"
		}
		return usagef("%s is missing (%s)", what, usage)
	case cmd.max >= 0 && len(pos) > cmd.max:
		return usagef("unexpected argument %q (%s)", pos[cmd.max], usage)
	}
	if cmd.name == "config" {
		switch {
		case pos[0] == "get" && len(pos) != 2:
			return usagef("config get takes JOB only (usage: shardjob config get JOB)")
		case pos[0] == "set" && len(pos) != 3:
			return usagef("config set needs JOB and FILE (usage: shardjob config set JOB FILE)")
		case pos[0] != "get" && pos[0] != "set":
			return usagef("unknown config command %q: use get or set (%s)", pos[0], usage)
		}
	}
	switch o.output {
	case "text", "json":
	default:
		return usagef("--output %q: use text or json", o.output)
	}
	if !cmd.noZK && o.timeout <= 0 {
		return usagef("--timeout %v must be positive", o.timeout)
	}
	if set["wait"] && o.wait < 0 {
		return usagef("--wait %v must not be negative", o.wait)
	}
	if set["job"] && o.job == "" {
		return usagef("--job needs a job name")
	}
	if set["server"] && o.server == "" {
		return usagef("--server needs a server id")
	}
	return nil
}

// env is what a command runs with.
type env struct {
	ctx    context.Context
	adm    *admin.Admin
	rc     regcenter.Center // what adm reads, for the commands it has no call for (check)
	out    io.Writer
	json   bool
	o      *options
	stderr io.Writer
}

func connectAndRun(cmd *command, pos []string, o *options, set map[string]bool, stdout, stderr io.Writer) error {
	cfg, err := regcenterConfig(o, set, os.Getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ConnectTimeout+time.Second)
	rc, err := regcenter.Open(ctx, cfg, regcenter.WithLogger(slog.New(slog.DiscardHandler)))
	cancel()
	if err != nil {
		return err
	}
	defer rc.Close()
	if cmd.name == "drain" && !set["wait"] {
		o.wait = 0 // drain waits only when asked to
	}
	budget := opTimeout
	if set["wait"] || cmd.name == "remove" || cmd.name == "shutdown" {
		budget += o.wait
	}
	ctx, cancel = context.WithTimeout(context.Background(), budget)
	defer cancel()
	e := &env{ctx: ctx, adm: admin.New(rc, codec), rc: rc, out: stdout, json: o.output == "json", o: o, stderr: stderr}
	return audited(e, cmd, pos, set, func() error { return cmd.run(e, pos) })
}

// exitCode maps an error to the exit code scripts rely on.
func exitCode(err error) int {
	var ue *usageError
	if code, ok := historyExit(err); ok {
		return code
	}
	switch {
	case errors.Is(err, errAlerts):
		return exitAlerts
	case errors.Is(err, admin.ErrUnknownJob), errors.Is(err, admin.ErrUnknownServer):
		return exitUnknown
	case errors.As(err, &ue), errors.Is(err, admin.ErrInvalid), errors.Is(err, regcenter.ErrInvalidConfig):
		return exitUsage
	}
	return exitFailed
}

// describe renders err as one line for stderr.
func describe(err error) string {
	msg := strings.TrimPrefix(strings.TrimPrefix(oneLine(err.Error()), "regcenter: "), "history: ")
	msg = strings.ReplaceAll(msg, ": regcenter: ", ": ")
	msg = strings.Replace(msg, admin.ErrInvalid.Error()+": ", "", 1)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		msg = "timed out: " + msg
	}
	return msg
}

// oneLine folds a multi-line message into one line.
func oneLine(s string) string { return admin.OneLine(errors.New(s)) }
