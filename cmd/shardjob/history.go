package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/shardjob/shardjob/history"
)

var historyHelpLine = strings.TrimSpace(`
History (read from the history database, no ZooKeeper; see docs/operations.md):
  history [JOB] [--since 1h] [--until T] [--failed] [--server S] [--kind K] [--limit N] [--before C]
          [--output-width N]  executions, newest first: start, job, item, kind, server, duration,
                              result, error and the run's output, on one line, cut at N characters
                              (default 60, 0: whole; --json: as it is); --events: the job status
                              events instead
  --history-driver sqlite|postgres   env SHARDJOB_HISTORY_DRIVER (default sqlite)
  --history-dsn FILE|DSN             env SHARDJOB_HISTORY_DSN (default shardjob-history.db)
  --json                      JSON as GET /history answers (same as -o json)`)

// historyOptions are the flags of "shardjob history".
type historyOptions struct {
	driver, dsn  string
	since, until string
	kind, before string
	failed       bool
	events, json bool
	limit        int
	outputWidth  int
}

// addHistoryFlags defines the flags of "shardjob history"; --server is
// shared with the other commands' options.
func addHistoryFlags(fs *flag.FlagSet, o *options) {
	h := &o.hist
	fs.StringVar(&h.driver, "history-driver", envOr("SHARDJOB_HISTORY_DRIVER", history.DriverSQLite), "the history `database`: sqlite or postgres (env SHARDJOB_HISTORY_DRIVER)")
	fs.StringVar(&h.dsn, "history-dsn", os.Getenv("SHARDJOB_HISTORY_DSN"), "the SQLite `file` (default "+history.DefaultSQLiteFile+") or the PostgreSQL connection string (env SHARDJOB_HISTORY_DSN)")
	fs.StringVar(&h.since, "since", "", "only rows from this `time` on: a duration before now such as 1h, or an RFC 3339 time")
	fs.StringVar(&h.until, "until", "", "only rows before this `time` (as --since)")
	fs.BoolVar(&h.failed, "failed", false, "only failed and timed-out executions (with --events: events that carry an error)")
	fs.StringVar(&o.server, "server", "", "only rows of this `server`")
	fs.StringVar(&h.kind, "kind", "", "only executions of this `kind` (fire, misfire, failover, trigger), or events of this kind")
	fs.IntVar(&h.limit, "limit", history.DefaultLimit, fmt.Sprintf("show at most `n` rows (1 to %d)", history.MaxLimit))
	fs.StringVar(&h.before, "before", "", "show the rows older than this `cursor` (the next cursor a previous page printed)")
	fs.BoolVar(&h.events, "events", false, "show the job status events (paused, resharded, leader, ...) instead of the executions")
	fs.IntVar(&h.outputWidth, "output-width", 60, "cut each run's output to `n` characters in the table (0: show it whole; --json shows it as it is)")
	fs.BoolVar(&h.json, "json", false, "print JSON, as GET /history answers (same as --output json)")
}

// historyFilter turns the flags into a filter; a bad value is a usage
// error naming the flag.
func historyFilter(jobName string, o *options, now time.Time) (history.Filter, error) {
	h := o.hist
	f := history.Filter{Job: jobName, Server: o.server, Kind: h.kind, Failed: h.failed, Limit: h.limit, Before: h.before}
	for _, p := range []struct {
		name, v string
		t       *time.Time
	}{{"since", h.since, &f.Since}, {"until", h.until, &f.Until}} {
		if p.v == "" {
			continue
		}
		t, err := history.ParseTime(p.v, now)
		if err != nil {
			return f, usagef("--%s %q: give a duration before now such as 1h, or an RFC 3339 time such as 2026-05-04T10:00:00Z", p.name, p.v)
		}
		*p.t = t
	}
	if h.outputWidth < 0 {
		return f, usagef("--output-width %d: give a number of characters, or 0 for the whole output", h.outputWidth)
	}
	if h.limit < 1 || h.limit > history.MaxLimit {
		return f, usagef("--limit %d: give a number from 1 to %d", h.limit, history.MaxLimit)
	}
	if h.before != "" {
		if n, err := strconv.ParseInt(h.before, 10, 64); err != nil || n <= 0 {
			return f, usagef("--before %q: give the next cursor a previous page printed", h.before)
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, usagef("--since %s is not before --until %s", h.since, h.until)
	}
	switch h.driver {
	case history.DriverSQLite, history.DriverPostgres:
	default:
		return f, usagef("--history-driver %q: use sqlite or postgres", h.driver)
	}
	if h.driver == history.DriverPostgres && h.dsn == "" {
		return f, usagef("--history-driver postgres needs --history-dsn (or SHARDJOB_HISTORY_DSN): a connection string")
	}
	return f, nil
}

// cmdHistory is "shardjob history [JOB]": it reads the history database
// directly, without ZooKeeper.
func cmdHistory(e *env, pos []string) error {
	ctx, o := e.ctx, e.o
	jobName := ""
	if len(pos) == 1 {
		jobName = pos[0]
	}
	f, err := historyFilter(jobName, o, time.Now())
	if err != nil {
		return err
	}
	rd, err := history.OpenReader(ctx, history.Config{Driver: o.hist.driver, DSN: o.hist.dsn})
	if err != nil {
		return err
	}
	defer rd.Close()
	if o.hist.events {
		p, err := rd.QueryEvents(ctx, f)
		if err != nil {
			return err
		}
		if e.json {
			return e.emit(p)
		}
		if len(p.Events) == 0 {
			e.printf("no events\n")
			return nil
		}
		tw := e.table()
		fmt.Fprintln(tw, "ID\tAT\tJOB\tSERVER\tKIND\tUNITS\tDETAIL")
		for _, ev := range p.Events {
			detail := ev.Detail
			for _, extra := range []string{ev.Peer, ev.Error} {
				if extra != "" {
					detail += " " + extra
				}
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", ev.ID, when(&ev.At), dash(ev.Job), ev.Server, ev.Kind, ev.Units, dash(detail))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		return printNext(e, p.Next)
	}
	p, err := rd.Query(ctx, f)
	if err != nil {
		return err
	}
	if e.json {
		return e.emit(p)
	}
	if len(p.Executions) == 0 {
		e.printf("no executions\n")
		return nil
	}
	tw := e.table()
	fmt.Fprintln(tw, "ID\tSTART\tJOB\tITEM\tKIND\tSERVER\tDURATION\tRESULT\tERROR\tOUTPUT")
	for _, x := range p.Executions {
		kind := x.Kind
		if x.Attempt > 1 { // a retry (the job's retry policy)
			kind += fmt.Sprintf(" attempt %d", x.Attempt)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", x.ID, when(&x.Start), x.Job, x.Item, kind, x.Server,
			x.Duration().Round(time.Millisecond), x.Result, dash(x.Error), outputCell(x.Output, x.OutputTruncated, o.hist.outputWidth))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printNext(e, p.Next)
}

// outputCell is a run's output as one cell of the table: a JSON string as
// its text, any other value as compact JSON; white space, control and
// format characters (an escape sequence, a direction override: nothing
// that could steer the terminal) folded to one space; at most width
// characters (0: all), ending in "…" when cut, and "(cut)" when the
// history itself holds only its start. "-" when there is none.
func outputCell(out json.RawMessage, truncated bool, width int) string {
	if len(out) == 0 {
		return "-"
	}
	var text string
	if err := json.Unmarshal(out, &text); err != nil {
		var b bytes.Buffer
		if err := json.Compact(&b, out); err != nil {
			return "(not JSON)" // history.Reader refuses such rows: not reached
		}
		text = b.String()
	}
	cell := foldForTerminal(text)
	if r := []rune(cell); width > 0 && len(r) > width {
		cell = strings.TrimRight(string(r[:width]), " ") + "…"
	}
	if truncated {
		cell += " (cut)"
	}
	if cell == "" {
		return "-"
	}
	return cell
}

// foldForTerminal folds white space, control and format characters (an
// escape sequence, a direction override: nothing that could steer the
// terminal) in text to one space, and trims it.
func foldForTerminal(text string) string {
	var b strings.Builder
	space := false
	for _, r := range text {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

func printNext(e *env, next string) error {
	if next != "" {
		e.printf("more: --before %s\n", next)
	}
	return nil
}

// runLocal runs a command that needs no ZooKeeper.
func runLocal(cmd *command, pos []string, o *options, stdout, stderr io.Writer) error {
	if o.hist.json {
		o.output = "json"
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return cmd.run(&env{ctx: ctx, out: stdout, json: o.output == "json", o: o, stderr: stderr}, pos)
}

// historyExit maps the history errors the command can meet to exit codes.
func historyExit(err error) (int, bool) {
	switch {
	case errors.Is(err, history.ErrInvalidFilter), errors.Is(err, history.ErrInvalidConfig):
		return exitUsage, true
	case errors.Is(err, history.ErrNoDatabase), errors.Is(err, history.ErrBadRow):
		return exitFailed, true
	}
	return 0, false
}
