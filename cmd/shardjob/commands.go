package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/layout"
)

// emit writes v as indented JSON, as the HTTP handler answers.
func (e *env) emit(v any) error { return admin.WriteJSON(e.out, v) }

func (e *env) printf(format string, a ...any) { fmt.Fprintf(e.out, format, a...) }

func (e *env) table() *tabwriter.Writer { return tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0) }

// when renders a time for people: local time, to the second.
func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func items(list []int) string {
	if len(list) == 0 {
		return "-"
	}
	return layout.FormatItems(list)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cronText(cron, zone string) string {
	if cron == "" {
		return "?"
	}
	if zone != "" {
		return cron + " (" + zone + ")"
	}
	return cron
}

func cmdJobs(e *env, _ []string) error {
	jobs, err := e.adm.Jobs(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		if jobs == nil {
			jobs = []admin.JobSummary{}
		}
		return e.emit(jobs)
	}
	if len(jobs) == 0 {
		e.printf("no jobs in namespace %s\n", e.adm.Namespace())
		return nil
	}
	tw := e.table()
	fmt.Fprintln(tw, "JOB\tSTATUS\tCRON\tITEMS\tONLINE\tLEADER\tLAST FIRE\tNEXT FIRE")
	var problems []string
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\n", j.Name, j.Status, cronText(j.Cron, j.TimeZone),
			j.ShardingTotalCount, j.Online, j.Registered, dash(j.Leader), when(j.LastFire), nextFireText(j.NextFire, j.NextFireNote))
		if j.ConfigError != "" {
			problems = append(problems, fmt.Sprintf("%s: config node rejected, instances keep their last good config: %s", j.Name, j.ConfigError))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range problems {
		e.printf("%s\n", p)
	}
	return nil
}

// nextFireText is a job's next fire, or why it has none ("no further
// fires" once its schedule has ended).
func nextFireText(next *time.Time, note string) string {
	if next == nil && note != "" {
		return note
	}
	return when(next)
}

func cmdStatus(e *env, args []string) error {
	st, err := e.adm.Status(e.ctx, args[0])
	if err != nil {
		return err
	}
	if e.json {
		return e.emit(st)
	}
	tw := e.table()
	online := 0
	for _, s := range st.Servers {
		if s.Online {
			online++
		}
	}
	fmt.Fprintf(tw, "job:\t%s\n", st.Name)
	fmt.Fprintf(tw, "status:\t%s\n", st.Status)
	fmt.Fprintf(tw, "cron:\t%s\n", cronText(st.Cron, st.TimeZone))
	itemLine := fmt.Sprint(st.ShardingTotalCount)
	if len(st.DisabledItems) > 0 {
		itemLine += " (disabled: " + layout.FormatItems(st.DisabledItems) + ")"
	}
	fmt.Fprintf(tw, "items:\t%s\n", itemLine)
	fmt.Fprintf(tw, "instances:\t%d online of %d\n", online, len(st.Servers))
	fmt.Fprintf(tw, "leader:\t%s\n", dash(st.Leader))
	fmt.Fprintf(tw, "last fire:\t%s\n", when(st.LastFire))
	fmt.Fprintf(tw, "next fire:\t%s\n", nextFireText(st.NextFire, st.NextFireNote))
	for _, p := range st.Parents {
		fmt.Fprintf(tw, "runs after:\t%s (%s, last fire %s)\n", p.Name, p.Status, when(p.LastFire))
	}
	if st.PausedUntil != nil {
		note := ""
		if st.PauseNote != "" {
			note = " (" + foldForTerminal(st.PauseNote) + ")"
		}
		fmt.Fprintf(tw, "paused until:\t%s%s\n", when(st.PausedUntil), note)
	}
	if st.ConfigError != "" {
		fmt.Fprintf(tw, "config:\trejected, instances keep their last good config: %s\n", st.ConfigError)
	}
	if st.Resharding {
		fmt.Fprintf(tw, "resharding:\tdue at the next fire\n")
	}
	for _, p := range st.Problems {
		fmt.Fprintf(tw, "problem:\t%s\n", p)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	e.printf("\n")
	tw = e.table()
	fmt.Fprintln(tw, "SERVER\tSTATE\tFLAGS\tITEMS\tRUNNING")
	for _, s := range st.Servers {
		state := s.State
		if !s.Online {
			state = "offline"
		}
		var flags []string
		for _, f := range []struct {
			on   bool
			name string
		}{{s.Leader, "leader"}, {s.Disabled, "disabled"}, {s.Paused, "paused"}, {s.ShutdownPending, "shutdown"}, {s.TriggerPending, "trigger"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, dash(state), dash(strings.Join(flags, ",")), items(s.Items), items(s.Running))
	}
	if len(st.Servers) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	e.printf("\n")
	tw = e.table()
	fmt.Fprintln(tw, "ITEM\tSERVER\tLAST FIRE\tKIND\tTOOK\tRESULT\tNOTES")
	for _, it := range st.Items {
		fire, kind, took, result := "-", "-", "-", "-"
		if l := it.Last; l != nil {
			fire, kind = when(&l.Fire), l.Kind
			took = (time.Duration(l.DurationMS) * time.Millisecond).String()
			result = "ok"
			if l.Error != "" {
				result = "error: " + shorten(oneLine(l.Error), 60)
			}
		}
		var notes []string
		if l := it.Last; l != nil && l.Since != nil {
			notes = append(notes, "last run made up for fires since "+l.Since.Local().Format("15:04:05"))
		}
		if it.Disabled {
			notes = append(notes, "disabled")
		}
		if r := it.Running; r != nil {
			notes = append(notes, fmt.Sprintf("running on %s (%s) since %s", r.Server, r.Kind, r.Begin.Local().Format("15:04:05")))
		}
		if it.HeldBy != "" && it.HeldBy != it.Server {
			// Its former owner still holds the mark: the new one waits.
			notes = append(notes, "running mark still held by "+it.HeldBy)
		}
		if it.MisfireSince != nil {
			notes = append(notes, "misfire pending since "+it.MisfireSince.Local().Format("15:04:05"))
		}
		if f := it.Failover; f != nil {
			n := "failover queued from " + f.From
			if f.ClaimedBy != "" {
				n += ", claimed by " + f.ClaimedBy
			}
			notes = append(notes, n)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Item, dash(it.Server), fire, kind, took, result, dash(strings.Join(notes, "; ")))
	}
	return tw.Flush()
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func cmdDump(e *env, args []string) error {
	d, err := e.adm.Dump(e.ctx, args[0])
	if err != nil {
		return err
	}
	if e.json {
		return e.emit(d)
	}
	e.printf("# namespace %s, job %s, %d nodes, taken %s\n", d.Namespace, d.Job, len(d.Nodes), d.Taken.Local().Format(time.RFC3339))
	for _, n := range d.Nodes {
		attrs := fmt.Sprintf("v%d", n.Version)
		if n.EphemeralOwner != "" {
			attrs += " ephemeral " + n.EphemeralOwner
		}
		data := strings.TrimRight(n.Data, "\n")
		switch {
		case data == "":
			e.printf("%s  [%s]\n", n.Path, attrs)
		case !strings.Contains(data, "\n"):
			e.printf("%s  [%s]  %s\n", n.Path, attrs, data)
		default:
			e.printf("%s  [%s]\n", n.Path, attrs)
			for _, l := range strings.Split(data, "\n") {
				e.printf("    %s\n", l)
			}
		}
	}
	return nil
}

func cmdConfig(e *env, args []string) error {
	job := args[1]
	if args[0] == "get" {
		data, err := e.adm.ConfigGet(e.ctx, job)
		if err != nil {
			return err
		}
		if !e.json {
			_, err := e.out.Write(data)
			return err
		}
		out := map[string]any{"job": job, "document": string(data)}
		if cfg, err := codec(e.ctx, data); err != nil {
			out["configError"] = admin.OneLine(err)
		} else {
			out["config"] = cfg
		}
		return e.emit(out)
	}
	file := args[2]
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return usagef("cannot read %s", strings.TrimPrefix(err.Error(), "open "))
	}
	cfg, changed, err := e.adm.ConfigSet(e.ctx, job, data)
	if err != nil {
		if errors.Is(err, admin.ErrInvalid) {
			return fileError(file, err)
		}
		return err
	}
	if e.json {
		return e.emit(map[string]any{"job": job, "changed": changed, "config": cfg})
	}
	if !changed {
		e.printf("config of %s unchanged\n", job)
		return nil
	}
	e.printf("config of %s updated: cron %q, %d items%s; every instance applies it now\n", job, cfg.Cron, cfg.ShardingTotalCount, map[bool]string{true: ", disabled", false: ""}[cfg.Disabled])
	return nil
}

func serverCmd(name string) func(e *env, args []string) error {
	return func(e *env, args []string) error {
		server := args[0]
		var changes []admin.Change
		var err error
		var done, already, after string
		switch name {
		case "disable":
			changes, err = e.adm.Disable(e.ctx, server, e.o.job)
			done, already, after = "disabled", "was already disabled", "its items move to the other servers at the next fire"
		case "enable":
			changes, err = e.adm.Enable(e.ctx, server, e.o.job)
			done, already, after = "enabled", "was not disabled", "it takes items again from the next fire"
		case "pause":
			changes, err = e.adm.Pause(e.ctx, server, e.o.job)
			done, already, after = "paused", "was already paused", "it fires nothing; its items stay with it and do not run until resumed"
		case "resume":
			changes, err = e.adm.Resume(e.ctx, server, e.o.job)
			done, already, after = "resumed", "was not paused", "it fires again from the next fire"
		}
		if err != nil {
			return err
		}
		if e.json {
			return e.emit(map[string]any{"changes": changes})
		}
		printChanges(e, server, changes, done, already)
		if anyChanged(changes) {
			e.printf("(%s)\n", after)
		}
		return nil
	}
}

func anyChanged(cs []admin.Change) bool {
	for _, c := range cs {
		if c.Changed {
			return true
		}
	}
	return false
}

func printChanges(e *env, server string, changes []admin.Change, done, already string) {
	for _, c := range changes {
		if c.Changed {
			e.printf("%s %s in job %s\n", server, done, c.Job)
		} else {
			e.printf("%s %s in job %s\n", server, already, c.Job)
		}
	}
}

func cmdShutdown(e *env, args []string) error {
	server := args[0]
	changes, err := e.adm.Shutdown(e.ctx, server, e.o.job)
	if err != nil {
		return err
	}
	jobs := make([]string, len(changes))
	for i, c := range changes {
		jobs[i] = c.Job
	}
	if !e.json {
		for _, c := range changes {
			if c.Changed {
				e.printf("asked %s to leave job %s\n", server, c.Job)
			} else {
				e.printf("%s was already asked to leave job %s\n", server, c.Job)
			}
		}
	}
	left := false
	if e.o.wait > 0 {
		if err := e.adm.WaitOffline(e.ctx, server, jobs, e.o.wait); err != nil {
			return err
		}
		left = true
		if !e.json {
			e.printf("%s has left %s\n", server, strings.Join(jobs, ", "))
		}
	}
	if e.json {
		return e.emit(map[string]any{"changes": changes, "left": left})
	}
	return nil
}

func cmdTrigger(e *env, args []string) error {
	job := args[0]
	changes, err := e.adm.Trigger(e.ctx, job, e.o.server)
	if err != nil {
		return err
	}
	if e.json {
		return e.emit(map[string]any{"changes": changes})
	}
	var fresh, pending []string
	for _, c := range changes {
		if c.Changed {
			fresh = append(fresh, c.Server)
		} else {
			pending = append(pending, c.Server)
		}
	}
	if len(fresh) > 0 {
		whose := "their"
		if len(fresh) == 1 {
			whose = "its"
		}
		e.printf("triggered %s on %s: %s items run once now\n", job, strings.Join(fresh, ", "), whose)
	}
	if len(pending) > 0 {
		e.printf("a trigger was already pending on %s\n", strings.Join(pending, ", "))
	}
	return nil
}

func itemsCmd(disable bool) func(e *env, args []string) error {
	return func(e *env, args []string) error {
		job := args[0]
		var list []int
		for _, a := range args[1:] {
			its, err := layout.ParseItems(a)
			if err != nil || len(its) == 0 {
				return fmt.Errorf("%w: item %q is not a non-negative integer (give items as 3 5 or 3,5)", admin.ErrInvalid, a)
			}
			list = append(list, its...)
		}
		var now []int
		var err error
		if disable {
			now, err = e.adm.DisableItems(e.ctx, job, list)
		} else {
			now, err = e.adm.EnableItems(e.ctx, job, list)
		}
		if err != nil {
			return err
		}
		if e.json {
			return e.emit(map[string]any{"job": job, "disabledItems": now})
		}
		if len(now) == 0 {
			e.printf("job %s: no items disabled; every item runs\n", job)
		} else {
			e.printf("job %s: items %s are disabled and kept out of every fire\n", job, layout.FormatItems(now))
		}
		return nil
	}
}

func cmdRemove(e *env, args []string) error {
	res, err := e.adm.Remove(e.ctx, args[0], e.o.wait, e.o.force)
	if err != nil {
		return err
	}
	if e.json {
		return e.emit(res)
	}
	stopped := "no instance was online"
	if len(res.Stopped) > 0 {
		stopped = strings.Join(res.Stopped, ", ") + " stopped it"
	}
	e.printf("removed job %s: %s; its nodes are deleted\n", res.Job, stopped)
	return nil
}

func cmdInstances(e *env, _ []string) error {
	p, err := e.adm.Placement(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		return e.emit(p)
	}
	if len(p.Instances) == 0 {
		e.printf("no instances in namespace %s\n", e.adm.Namespace())
		return nil
	}
	tw := e.table()
	fmt.Fprintln(tw, "SERVER\tSTATE\tUNITS\tCAP\tTOLERANCE\tALARM\tSCORE\tRUNNING")
	for _, in := range p.Instances {
		state := "online"
		switch {
		case !in.Live:
			state = "gone"
		case in.Drained:
			state = "drained"
		case in.Draining:
			state = "draining"
		case in.Offline:
			state = "offline"
		case in.Starting:
			state = "starting"
		}
		alarm := "-"
		if in.AlarmThreshold > 0 {
			alarm = fmt.Sprintf(">%d", in.AlarmThreshold)
			if in.Alarmed {
				alarm += " RAISED"
			}
		}
		score := "-"
		if in.Score != nil {
			score = fmt.Sprintf("%.2f", *in.Score)
		}
		capText := "-"
		if in.Cap > 0 {
			capText = fmt.Sprint(in.Cap)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\t%d\n", in.Server, state, in.Units, capText, in.FaultTolerance, alarm, score, in.Running)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	e.printf("%d units in the namespace", p.Units)
	if p.Unplaced > 0 {
		e.printf(", %d UNPLACED: no instance may take them (caps); they are placed when capacity appears", p.Unplaced)
	}
	e.printf("\n")
	return nil
}

func cmdDrain(e *env, args []string) error {
	server := args[0]
	changed, err := e.adm.Drain(e.ctx, server)
	if err != nil {
		return err
	}
	warning, err := e.adm.DrainWarning(e.ctx, server)
	if err != nil {
		return err
	}
	if !e.json {
		if changed {
			e.printf("%s is draining: it takes no new units and hands its units to the others\n", server)
		} else {
			e.printf("%s was already draining\n", server)
		}
		if warning != "" {
			fmt.Fprintf(e.stderr, "warning: %s\n", warning)
		}
	}
	out := map[string]any{"server": server, "changed": changed}
	if warning != "" {
		out["warning"] = warning
	}
	if e.o.wait <= 0 {
		if e.json {
			return e.emit(out)
		}
		return nil
	}
	in, err := e.adm.WaitDrained(e.ctx, server, e.o.wait)
	if err != nil {
		return err
	}
	if e.json {
		out["drained"], out["instance"] = true, in
		return e.emit(out)
	}
	if warning != "" {
		e.printf("%s is drained: it holds no units and runs no items; stopping it is safe for the instance, but its units are unplaced (see the warning above)\n", server)
		return nil
	}
	e.printf("%s is drained: it holds no units and runs no items; it is safe to stop\n", server)
	return nil
}

func cmdUndrain(e *env, args []string) error {
	server := args[0]
	changed, err := e.adm.Undrain(e.ctx, server)
	if err != nil {
		return err
	}
	if e.json {
		return e.emit(map[string]any{"server": server, "changed": changed})
	}
	if changed {
		e.printf("%s is no longer draining: it takes units again\n", server)
	} else {
		e.printf("%s was not draining\n", server)
	}
	return nil
}

func cmdRebalance(e *env, _ []string) error {
	n, err := e.adm.Rebalance(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		return e.emit(map[string]any{"jobs": n})
	}
	e.printf("%d jobs place their items again before their next fire\n", n)
	return nil
}
