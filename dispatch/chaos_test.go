package dispatch

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	chaosTasks = flag.Int("dispatch.chaos.tasks", 100000, "tasks the chaos test runs")
	chaosKills = flag.Int("dispatch.chaos.kills", 4, "kill -9 and restart rounds in the chaos test")
)

// chaosNode is one node process of the chaos test.
type chaosNode struct {
	name  string // the node id of this incarnation
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error
}

// TestChaos runs three node processes on one PostgreSQL, kills them with
// -9 and restarts them while they run tasks for three tenants, and checks
// from the execution log that no cap was exceeded at any instant, that
// every task ended finished, and that every repeated start follows an
// attempt that was cut short by a kill.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test skipped in -short mode")
	}
	ctx := testCtx(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "chaosnode")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./internal/chaosnode")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build chaosnode: %v\n%s", err, out)
	}
	dsn, err := pg.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	caps := map[string]int{"t1": 10, "t2": 20, "t3": 40}
	const global = 50
	d := open(t, Config{Driver: "postgres", DSN: dsn})
	if err := d.SetGlobalMax(ctx, global); err != nil {
		t.Fatal(err)
	}
	total := *chaosTasks
	now := time.Now()
	var names []string
	for w, c := range caps {
		names = append(names, w)
		mustWorker(t, d, w, c)
	}
	sort.Strings(names)
	for i, w := range names {
		n := total / len(names)
		if i == 0 {
			n += total % len(names)
		}
		for off := 0; off < n; off += MaxBatch {
			k := min(MaxBatch, n-off)
			ts := make([]NewTask, k)
			for j := range ts {
				ts[j] = NewTask{ExternalID: fmt.Sprintf("%s-%d", w, off+j)}
			}
			if _, err := d.Assign(ctx, Assignment{Worker: w, Start: now.Add(-time.Second), End: now.Add(time.Minute), Tasks: ts, MaxRetries: 10, Timeout: time.Minute}); err != nil {
				t.Fatal(err)
			}
		}
	}
	logPath := filepath.Join(dir, "exec.log")
	kills := map[string]int64{} // node incarnation → kill time (unix ns)
	gen := 0
	spawn := func(slot int) *chaosNode {
		gen++
		n := &chaosNode{name: fmt.Sprintf("n%d-g%d", slot, gen), done: make(chan error, 1)}
		n.cmd = exec.Command(bin, "-dsn", dsn, "-node", n.name, "-log", logPath, "-hold", "1ms")
		n.cmd.Stderr = os.Stderr
		var err error
		if n.stdin, err = n.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := n.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := n.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make(chan error, 1)
		go func() {
			line, err := bufio.NewReader(out).ReadString('\n')
			if err == nil && line != "ready\n" {
				err = fmt.Errorf("said %q", line)
			}
			ready <- err
			_, _ = io.Copy(io.Discard, out)
			n.done <- n.cmd.Wait()
		}()
		select {
		case err := <-ready:
			if err != nil {
				t.Fatalf("node %s did not start: %v", n.name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("node %s not ready within 30s", n.name)
		}
		return n
	}
	kill := func(n *chaosNode) {
		if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case <-n.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("node %s did not die within 30s of SIGKILL", n.name)
		}
		kills[n.name] = time.Now().UnixNano()
	}
	nodes := []*chaosNode{spawn(0), spawn(1), spawn(2)}
	defer func() {
		for _, n := range nodes {
			if n.cmd.ProcessState == nil {
				if err := n.cmd.Process.Signal(syscall.SIGKILL); err == nil {
					<-n.done
				}
			}
		}
	}()

	finished := func() int {
		var n int
		if err := d.DB().QueryRowContext(ctx, `SELECT count(*) FROM dispatch_tasks WHERE status IN ('finished', 'failed')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Kill one node every so often while the work runs, restarting it a
	// moment later.
	for k := 0; k < *chaosKills; k++ {
		target := total * (k + 1) / (*chaosKills + 2)
		deadline := time.Now().Add(3 * time.Minute)
		for finished() < target {
			if time.Now().After(deadline) {
				t.Fatalf("stuck at %d ended tasks, waiting for %d", finished(), target)
			}
			time.Sleep(50 * time.Millisecond)
		}
		slot := k % len(nodes)
		kill(nodes[slot])
		time.Sleep(300 * time.Millisecond)
		nodes[slot] = spawn(slot)
	}
	deadline := time.Now().Add(4 * time.Minute)
	for finished() < total {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks ended after the last kill and 4 minutes", finished(), total)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, n := range nodes {
		if err := n.stdin.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-n.done:
			if err != nil {
				t.Errorf("node %s stopped with %v", n.name, err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("node %s did not stop within 60s", n.name)
		}
	}

	// The store: every task finished, nothing running, counters at zero.
	var byStatus = map[string]int{}
	rows, err := d.DB().QueryContext(ctx, `SELECT status, count(*) FROM dispatch_tasks GROUP BY status`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		byStatus[s] = n
	}
	rows.Close()
	if byStatus["finished"] != total {
		t.Errorf("tasks by status %v, want all %d finished", byStatus, total)
	}
	if g, err := d.Global(ctx); err != nil || g.Running != 0 {
		t.Errorf("global row %+v (%v), want nothing running", g, err)
	}

	rep := analyseChaos(t, logPath, caps, global, kills)
	t.Logf("chaos: %d tasks, %d starts, %d kills; peak running %v (caps %v), in all %d (cap %d); %d repeated starts, each after an attempt whose node was killed",
		total, rep.starts, len(kills), rep.peak, caps, rep.peakAll, global, rep.repeats)
	if len(rep.tasks) != total {
		t.Errorf("the log shows starts of %d tasks, want %d", len(rep.tasks), total)
	}
}

type chaosReport struct {
	starts, repeats int
	peak            map[string]int
	peakAll         int
	tasks           map[string]bool
}

// analyseChaos reads the execution log. A handler's hold [S, E] lies
// within the time the store counted its slots; a handler killed with its
// node has no E, and its hold is taken to end at the kill, which is before
// its lease could lapse. So the holds overlap no more than the store's
// counts, and a count over a cap here is a cap exceeded.
func analyseChaos(t *testing.T, path string, caps map[string]int, global int, kills map[string]int64) chaosReport {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type key struct {
		uuid    string
		attempt int
	}
	type hold struct {
		worker, node string
		start, end   int64
	}
	holds := map[key]*hold{}
	startsOf := map[string][]key{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Fields(sc.Text())
		if len(p) != 6 {
			t.Fatalf("bad log line %q", sc.Text())
		}
		att, err1 := strconv.Atoi(p[3])
		ts, err2 := strconv.ParseInt(p[5], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad log line %q", sc.Text())
		}
		k := key{p[1], att}
		switch p[0] {
		case "S":
			if holds[k] != nil {
				t.Errorf("attempt %d of %s started twice", att, p[1])
				continue
			}
			holds[k] = &hold{worker: p[2], node: p[4], start: ts}
			startsOf[p[1]] = append(startsOf[p[1]], k)
		case "E":
			if h := holds[k]; h != nil {
				h.end = ts
			} else {
				t.Errorf("end without start: %q", sc.Text())
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	rep := chaosReport{peak: map[string]int{}, tasks: map[string]bool{}}
	type ev struct {
		at     int64
		delta  int
		worker string
	}
	var evs []ev
	for k, h := range holds {
		rep.starts++
		rep.tasks[k.uuid] = true
		end := h.end
		if end == 0 {
			killed, ok := kills[h.node]
			if !ok {
				t.Errorf("attempt %d of %s on %s never ended, and that node was not killed", k.attempt, k.uuid, h.node)
				continue
			}
			end = killed
		}
		evs = append(evs, ev{h.start, 1, h.worker}, ev{end, -1, h.worker})
	}
	// Ends before starts at the same instant: a freed slot may be reused.
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].at != evs[j].at {
			return evs[i].at < evs[j].at
		}
		return evs[i].delta < evs[j].delta
	})
	running := map[string]int{}
	all := 0
	for _, e := range evs {
		running[e.worker] += e.delta
		all += e.delta
		if running[e.worker] > caps[e.worker] {
			t.Fatalf("at %d worker %s had %d running, over its cap %d", e.at, e.worker, running[e.worker], caps[e.worker])
		}
		if all > global {
			t.Fatalf("at %d %d tasks ran, over the global cap %d", e.at, all, global)
		}
		rep.peak[e.worker] = max(rep.peak[e.worker], running[e.worker])
		rep.peakAll = max(rep.peakAll, all)
	}
	// Every start but a task's last must be an attempt cut short by a kill.
	for uuid, ks := range startsOf {
		sort.Slice(ks, func(i, j int) bool { return ks[i].attempt < ks[j].attempt })
		for _, k := range ks[:len(ks)-1] {
			h := holds[k]
			// The node died before the attempt's finish was recorded: in
			// its hold (no E) or between the hold's end and the finish.
			if killedAt, killed := kills[h.node]; !killed || killedAt < h.start {
				t.Errorf("task %s started again after attempt %d on %s, whose node did not die while it ran", uuid, k.attempt, h.node)
			}
			rep.repeats++
		}
	}
	return rep
}
