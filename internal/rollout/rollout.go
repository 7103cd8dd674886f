// Package rollout replays, with processes on one machine, the rolling update
// a Kubernetes Deployment makes of shardjob run pods (maxSurge 1,
// maxUnavailable 0): a new instance with a new server id starts, and once
// its readiness probe answers 200 (and it has run an item) the oldest
// instance gets SIGTERM; once per pod. A script job logs every run with
// its sharding context, and the report says whether any fire in the
// update's window was lost, ran twice, or ran twice at once.
//
// example/kubernetes/rollout runs it on the embedded default; the
// shardjob command's tests run it on ZooKeeper.
package rollout

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/jobtype"
)

// Options configure Run.
type Options struct {
	// Bin is the shardjob command to run. Required.
	Bin string
	// Dir holds the jobs file, the run log and each pod's log and state
	// directory. Required.
	Dir string
	// Registry is the body of the jobs file's regcenter section, one
	// "key: value" per line ("servers: [127.0.0.1:2181]", "embeddedDir:
	// /tmp/member"). Required.
	Registry []string
	// Namespace is the registry namespace. Default "rollout".
	Namespace string
	// Pods is how many instances run, and are replaced. Default 3.
	Pods int
	// Items is the test job's item count. Default 4.
	Items int
	// Wait bounds each wait: an instance's readiness, its first run, its
	// exit after SIGTERM. Default 2 minutes.
	Wait time.Duration
	// Progress, when set, receives a line per step.
	Progress io.Writer
}

// Report is what the runs of the update's window say.
type Report struct {
	// From and To are the window's first and last fire checked: from the
	// first second after every old pod ran an item to two seconds after
	// the last old pod stopped.
	From, To time.Time
	// Fires is the item fires in the window; Lost those no run stands
	// for, Twice those two runs or more stand for.
	Fires, Lost, Twice int
	// Overlaps counts two runs of one item at once.
	Overlaps int
	// Runs counts every run logged, Kinds by kind.
	Runs  int
	Kinds map[string]int
	// Examples names a few of the lost, twice-run and overlapping fires.
	Examples []string
	// TeardownErrors are the new pods' exits once the window is checked,
	// when not clean. On an embedded member they may name the registry
	// lost while the pod hosting it stopped; on a registry of its own
	// there should be none.
	TeardownErrors []string
}

// OK reports no fire lost, none run twice, none twice at once.
func (r Report) OK() bool { return r.Lost == 0 && r.Twice == 0 && r.Overlaps == 0 }

func (r Report) String() string {
	return fmt.Sprintf("window %s–%s: %d item fires, %d lost, %d run twice, %d runs at once with another; %d runs %v",
		r.From.Format("15:04:05"), r.To.Format("15:04:05"), r.Fires, r.Lost, r.Twice, r.Overlaps, r.Runs, r.Kinds)
}

// pod is one shardjob run process.
type pod struct {
	id   string
	cmd  *exec.Cmd
	log  string     // its stderr
	done chan error // Wait's result, put back by whoever reads it
}

// Run replays the rolling update and checks the runs. Every process it
// starts has ended when it returns.
func Run(ctx context.Context, o Options) (Report, error) {
	if o.Bin == "" || o.Dir == "" || len(o.Registry) == 0 {
		return Report{}, errors.New("rollout: Bin, Dir and Registry are required")
	}
	if o.Namespace == "" {
		o.Namespace = "rollout"
	}
	if o.Pods <= 0 {
		o.Pods = 3
	}
	if o.Items <= 0 {
		o.Items = 4
	}
	if o.Wait <= 0 {
		o.Wait = 2 * time.Minute
	}
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	runs := filepath.Join(o.Dir, "runs")
	jobs := filepath.Join(o.Dir, "jobs.yaml")
	body := "regcenter:\n"
	for _, l := range o.Registry {
		body += "  " + l + "\n"
	}
	// The script logs when its command began and ended, then its context
	// (the shell's $1). Lines this short are appended whole.
	body += fmt.Sprintf(`  namespace: %s
  sessionTimeout: 4s
jobs:
  - name: tick
    type: script
    cron: "* * * * * *"
    shardingTotalCount: %d
    failover: true
    script:
      shell: true
      command: 'b=$(date +%%s%%N); sleep 0.2; echo "$b $(date +%%s%%N) $1" >> %s'
`, o.Namespace, o.Items, runs)
	if err := os.WriteFile(jobs, []byte(body), 0o600); err != nil {
		return Report{}, err
	}

	var pods []*pod
	defer func() { // whatever happened, no process outlives Run
		for _, p := range pods {
			p.kill()
		}
	}()
	start := func(id string) (*pod, error) {
		p, err := startPod(ctx, o, id, jobs)
		if err != nil {
			return nil, err
		}
		pods = append(pods, p)
		if err := p.awaitReady(ctx, o.Wait); err != nil {
			return nil, err
		}
		if err := awaitRunBy(ctx, runs, id, o.Wait); err != nil {
			return nil, err
		}
		progress("%s ready and running items", id)
		return p, nil
	}
	for i := range o.Pods {
		if _, err := start(fmt.Sprintf("app-old-%d", i)); err != nil {
			return Report{}, err
		}
	}
	rep := Report{From: time.Now().Truncate(time.Second).Add(time.Second)}
	for i := range o.Pods {
		if _, err := start(fmt.Sprintf("app-new-%d", i)); err != nil {
			return rep, err
		}
		if err := pods[i].stop(o.Wait); err != nil {
			return rep, err
		}
		progress("%s stopped by SIGTERM", pods[i].id)
	}
	// The window ends two seconds after the last old pod stopped; the new
	// pods stop once every item's runs reach past it.
	rep.To = time.Now().Truncate(time.Second).Add(2 * time.Second)
	if err := awaitRunsThrough(ctx, runs, o.Items, rep.To, o.Wait); err != nil {
		return rep, err
	}
	for _, p := range pods[o.Pods:] {
		if err := p.stop(o.Wait); err != nil {
			rep.TeardownErrors = append(rep.TeardownErrors, err.Error())
		}
	}
	all, err := readRuns(runs)
	if err != nil {
		return rep, err
	}
	check(&rep, all, o.Items)
	return rep, nil
}

var probeAddr = regexp.MustCompile(`msg="serving probes" addr=(\S+)`)

// startPod starts shardjob run as pod id, its stderr in Dir/{id}.log.
func startPod(ctx context.Context, o Options, id, jobs string) (*pod, error) {
	p := &pod{id: id, log: filepath.Join(o.Dir, id+".log"), done: make(chan error, 1)}
	f, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the process has its own descriptor
	p.cmd = exec.Command(o.Bin, "run", "--server-id", id, "--state-dir", filepath.Join(o.Dir, id+".state"),
		"--health", "127.0.0.1:0", "--shutdown-timeout", "20s", jobs)
	p.cmd.Stderr = f
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("rollout: starting %s: %w", id, err)
	}
	go func() { p.done <- p.cmd.Wait() }() // owned by the pod: ends with the process
	return p, nil
}

// exited returns the process's exit, if it has exited.
func (p *pod) exited() (error, bool) {
	select {
	case err := <-p.done:
		p.done <- err
		return err, true
	default:
		return nil, false
	}
}

// awaitReady waits until the pod's readiness probe answers 200.
func (p *pod) awaitReady(ctx context.Context, wait time.Duration) error {
	return poll(ctx, wait, func() (bool, error) {
		if err, ok := p.exited(); ok {
			return false, fmt.Errorf("rollout: %s exited (%v) before it was ready; see %s", p.id, err, p.log)
		}
		data, err := os.ReadFile(p.log)
		if err != nil {
			return false, err
		}
		m := probeAddr.FindSubmatch(data)
		if m == nil {
			return false, nil
		}
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + string(m[1]) + "/readyz")
		if err != nil {
			return false, nil // not serving yet
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}, p.id+" ready")
}

// stop sends SIGTERM and waits for a clean exit.
func (p *pod) stop(wait time.Duration) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("rollout: %s: %w", p.id, err)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			return fmt.Errorf("rollout: %s: %v after SIGTERM; see %s", p.id, err, p.log)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("rollout: %s did not stop within %v of SIGTERM; see %s", p.id, wait, p.log)
	}
}

// kill ends a pod still running and reaps it.
func (p *pod) kill() {
	if _, ok := p.exited(); ok {
		return
	}
	p.cmd.Process.Kill()
	<-p.done
}

// poll calls f every 50 ms until it says done or fails, for at most wait.
func poll(ctx context.Context, wait time.Duration, f func() (bool, error), what string) error {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := f()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("rollout: not %s within %v", what, wait)
		case <-tick.C:
		}
	}
}

// awaitRunBy waits until the run log holds a run by server.
func awaitRunBy(ctx context.Context, path, server string, wait time.Duration) error {
	return poll(ctx, wait, func() (bool, error) {
		runs, err := readRuns(path)
		return slices.ContainsFunc(runs, func(r Record) bool { return r.Ctx.ServerID == server }), err
	}, "a run by "+server)
}

// awaitRunsThrough waits until every item has a run standing for a fire
// at or after to.
func awaitRunsThrough(ctx context.Context, path string, items int, to time.Time, wait time.Duration) error {
	return poll(ctx, wait, func() (bool, error) {
		runs, err := readRuns(path)
		reached := map[int]bool{}
		for _, r := range runs {
			if !r.Through().Before(to) {
				reached[r.Ctx.ShardingItem] = true
			}
		}
		return len(reached) == items, err
	}, "every item's runs past "+to.Format("15:04:05"))
}

// Record is one run the test job logged: when its command began and ended,
// and its sharding context.
type Record struct {
	Begin, End int64 // unix ns
	Ctx        jobtype.Context
}

// Through is the latest fire the run stands for.
func (r Record) Through() time.Time {
	if r.Ctx.Through.IsZero() {
		return r.Ctx.FireTime
	}
	return r.Ctx.Through
}

// readRuns reads the run log; a missing log holds no run.
func readRuns(path string) ([]Record, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Record
	for line := range strings.Lines(string(data)) {
		if !strings.HasSuffix(line, "\n") {
			break // being written
		}
		f := strings.SplitN(strings.TrimSpace(line), " ", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("rollout: run line %q", line)
		}
		var r Record
		var err1, err2 error
		r.Begin, err1 = strconv.ParseInt(f[0], 10, 64)
		r.End, err2 = strconv.ParseInt(f[1], 10, 64)
		if err := errors.Join(err1, err2, json.Unmarshal([]byte(f[2]), &r.Ctx)); err != nil {
			return nil, fmt.Errorf("rollout: run line %q: %w", line, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// check fills rep from the runs: every item fire of the window covered by
// exactly one run, no two runs of an item at once.
func check(rep *Report, runs []Record, items int) {
	rep.Runs, rep.Kinds = len(runs), map[string]int{}
	for _, r := range runs {
		rep.Kinds[r.Ctx.Kind]++
	}
	example := func(format string, args ...any) {
		if len(rep.Examples) < 10 {
			rep.Examples = append(rep.Examples, fmt.Sprintf(format, args...))
		}
	}
	for s := rep.From; !s.After(rep.To); s = s.Add(time.Second) {
		for item := range items {
			rep.Fires++
			n := 0
			for _, r := range runs {
				if r.Ctx.ShardingItem == item && !s.Before(r.Ctx.FireTime) && !s.After(r.Through()) {
					n++
				}
			}
			switch {
			case n == 0:
				rep.Lost++
				example("item %d @%s lost", item, s.Format("15:04:05"))
			case n > 1:
				rep.Twice++
				example("item %d @%s ran %d times", item, s.Format("15:04:05"), n)
			}
		}
	}
	for item := range items {
		var rs []Record
		for _, r := range runs {
			if r.Ctx.ShardingItem == item {
				rs = append(rs, r)
			}
		}
		slices.SortFunc(rs, func(a, b Record) int { return cmp.Compare(a.Begin, b.Begin) })
		far := 0
		for i := 1; i < len(rs); i++ {
			if rs[i].Begin < rs[far].End {
				rep.Overlaps++
				example("item %d ran on %s (fire %s) and %s (fire %s) at once", item, rs[far].Ctx.ServerID,
					rs[far].Ctx.FireTime.Format("15:04:05"), rs[i].Ctx.ServerID, rs[i].Ctx.FireTime.Format("15:04:05"))
			}
			if rs[i].End > rs[far].End {
				far = i
			}
		}
	}
}
