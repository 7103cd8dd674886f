package dispatch

import (
	"bufio"
	"context"
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
	chaosTasks = flag.Int("dispatch.chaos.tasks", 40000, "tasks the chaos test runs")
	chaosKills = flag.Int("dispatch.chaos.kills", 6, "kill -9 and restart rounds in the chaos test")
)

// The chaos test's tenants. A tenant's window sets its place in the
// deadline order: t1's acceptable starts come first, so it runs at its
// cap, then t2, and t3 takes the global slots left; its larger share of
// the tasks runs at its own cap once the others are done. So every cap
// binds at some point.
var chaosTenants = []struct {
	name   string
	cap    int
	share  float64       // of the tasks
	window time.Duration // acceptable starts spread over [now−1s, now+window]
}{
	{"t1", 50, 0.15, 10 * time.Second},
	{"t2", 80, 0.25, 20 * time.Second},
	{"t3", 160, 0.60, time.Minute},
}

const (
	chaosGlobal = 240
	// Each task's work takes a random time in this range (dispatchchaos's
	// -min-hold and -max-hold), so that a kill lands on running attempts.
	chaosMinHold = 20 * time.Millisecond
	chaosMaxHold = 300 * time.Millisecond
	// chaosMaxRetries is high enough that kills alone never fail a task.
	chaosMaxRetries = 10
)

// chaosNode is one node process of the chaos test.
type chaosNode struct {
	name   string // the node id of this incarnation
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan error // the process's exit, once
	exited bool       // done was received
}

// wait waits up to timeout for the process to exit and returns how it
// exited; n.exited tells an exit from the timeout.
func (n *chaosNode) wait(timeout time.Duration) error {
	select {
	case err := <-n.done:
		n.exited = true
		return err
	case <-time.After(timeout):
		return fmt.Errorf("node %s did not exit within %s", n.name, timeout)
	}
}

// chaosKill is when one node incarnation was killed: sent is the moment
// before SIGKILL was sent, dead the moment its exit was reaped. Every log
// line of the incarnation was written before dead.
type chaosKill struct {
	node       string
	sent, dead int64 // unix ns
}

// TestChaos runs three node processes on one PostgreSQL, kills them with
// -9 and restarts them while they run tasks for three tenants, and checks
// from the execution log and the store that no cap was exceeded at any
// instant, that every task ended finished (or failed with its retries
// spent), that every kill caught attempts in flight and they were
// dispatched again, and that every repeated start is explained by the
// death of the node running the earlier attempt.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test skipped in -short mode")
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "dispatchchaos")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/shardjob/shardjob/tools/dispatchchaos")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build dispatchchaos: %v\n%s", err, out)
	}
	dsn, err := pg.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := open(t, Config{Driver: "postgres", DSN: dsn})
	if err := d.SetGlobalMax(ctx, chaosGlobal); err != nil {
		t.Fatal(err)
	}
	total := *chaosTasks
	caps := map[string]int{}
	now := time.Now()
	assigned := 0
	for i, tn := range chaosTenants {
		caps[tn.name] = tn.cap
		mustWorker(t, d, tn.name, tn.cap)
		n := int(float64(total) * tn.share)
		if i == len(chaosTenants)-1 {
			n = total - assigned
		}
		assigned += n
		for off := 0; off < n; off += MaxBatch {
			k := min(MaxBatch, n-off)
			ts := make([]NewTask, k)
			for j := range ts {
				ts[j] = NewTask{ExternalID: fmt.Sprintf("%s-%d", tn.name, off+j)}
			}
			if _, err := d.Assign(ctx, Assignment{Worker: tn.name, Start: now.Add(-time.Second), End: now.Add(tn.window),
				Tasks: ts, MaxRetries: chaosMaxRetries, Timeout: time.Minute}); err != nil {
				t.Fatal(err)
			}
		}
	}
	logPath := filepath.Join(dir, "exec.log")
	var kills []chaosKill
	gen := 0
	spawn := func(slot int) *chaosNode {
		gen++
		n := &chaosNode{name: fmt.Sprintf("n%d-g%d", slot, gen), done: make(chan error, 1)}
		n.cmd = exec.Command(bin, "-dsn", dsn, "-node", n.name, "-log", logPath,
			"-min-hold", chaosMinHold.String(), "-max-hold", chaosMaxHold.String())
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
		// Owned by the node: ends when the process exits (n.done).
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
		k := chaosKill{node: n.name, sent: time.Now().UnixNano()}
		if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := n.wait(30 * time.Second); !n.exited {
			t.Fatal(err)
		}
		k.dead = time.Now().UnixNano()
		kills = append(kills, k)
	}
	nodes := []*chaosNode{spawn(0), spawn(1), spawn(2)}
	defer func() {
		for _, n := range nodes {
			if !n.exited {
				if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Errorf("kill node %s: %v", n.name, err)
				} else if err := n.wait(30 * time.Second); !n.exited {
					t.Error(err)
				}
			}
		}
	}()

	ended := func() int {
		var n int
		if err := d.DB().QueryRowContext(ctx, `SELECT count(*) FROM dispatch_tasks WHERE status IN ('finished', 'failed')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Kill one node every so often while the work runs, restarting it a
	// moment later. The count scans the tasks, so it is polled gently: it
	// competes with the nodes for the machine.
	for k := 0; k < *chaosKills; k++ {
		target := total * (k + 1) / (*chaosKills + 2)
		deadline := time.Now().Add(3 * time.Minute)
		for ended() < target {
			if time.Now().After(deadline) {
				t.Fatalf("stuck at %d ended tasks, waiting for %d", ended(), target)
			}
			time.Sleep(250 * time.Millisecond)
		}
		slot := k % len(nodes)
		// Kill it while it runs something (its leases are its node id
		// and a suffix): on a loaded machine a node just restarted may
		// not have claimed work yet, and a kill that catches nothing in
		// flight tests nothing.
		busyBy := time.Now().Add(15 * time.Second)
		for time.Now().Before(busyBy) {
			var running int
			if err := d.DB().QueryRowContext(ctx, `SELECT count(*) FROM dispatch_tasks WHERE status = 'running' AND lease_owner LIKE $1`, nodes[slot].name+"/%").Scan(&running); err != nil {
				t.Fatal(err)
			}
			if running > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		kill(nodes[slot])
		time.Sleep(300 * time.Millisecond)
		nodes[slot] = spawn(slot)
	}
	deadline := time.Now().Add(4 * time.Minute)
	for ended() < total {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks ended after the last kill and 4 minutes", ended(), total)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, n := range nodes {
		if err := n.stdin.Close(); err != nil {
			t.Fatal(err)
		}
		err := n.wait(60 * time.Second)
		if !n.exited {
			t.Fatal(err)
		}
		if err != nil {
			t.Errorf("node %s stopped with %v", n.name, err)
		}
	}
	ran := time.Since(began)

	// The store: nothing running, counters at zero.
	if g, err := d.Global(ctx); err != nil || g.Running != 0 {
		t.Errorf("global row %+v (%v), want nothing running", g, err)
	}
	ws, err := d.Workers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Running != 0 {
			t.Errorf("worker %s counts %d running after the run, want 0", w.Name, w.Running)
		}
	}
	store := chaosStore(ctx, t, d)
	if len(store) != total {
		t.Fatalf("the store holds %d tasks, want %d", len(store), total)
	}

	logFile, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	rep, err := analyseChaos(logFile, store, caps, chaosGlobal, kills)
	if err != nil {
		t.Fatal(err)
	}
	capLine := "no cap exceeded at any instant"
	if rep.overCap != "" {
		capLine = "a cap exceeded: " + rep.overCap
	}
	t.Logf("chaos: %d tasks (%v), %d attempts started, in %s", total, rep.byStatus, rep.starts, ran.Round(time.Second))
	t.Logf("chaos: peak running %v (caps %v), in all %d (cap %d): %s", rep.peak, caps, rep.peakAll, chaosGlobal, capLine)
	for _, k := range kills {
		t.Logf("chaos: kill -9 %s: %d attempts in flight, %d dispatched again, %d finished (the finish recorded, its reply lost)",
			k.node, rep.inFlight[k.node], rep.again[k.node], rep.replyLost[k.node])
	}
	t.Logf("chaos: %d kills caught %d attempts in flight; %d started again %s–%s after the kill; %d duplicate starts, %d explained by the death of the node running the earlier attempt; %d attempts claimed by a killed node before its listener ran",
		len(kills), rep.inFlightAll, rep.againAll, time.Duration(rep.minDelay).Round(time.Millisecond), time.Duration(rep.maxDelay).Round(time.Millisecond),
		rep.dups, rep.explained, rep.unstarted)
	for i, p := range rep.problems {
		if i == 20 {
			t.Errorf("and %d more problems", len(rep.problems)-i)
			break
		}
		t.Error(p)
	}
}

// chaosTask is one task as the store ended it.
type chaosTask struct {
	worker     string
	status     Status
	attempts   int
	maxRetries int
}

func chaosStore(ctx context.Context, t *testing.T, d *Dispatcher) map[string]chaosTask {
	rows, err := d.DB().QueryContext(ctx, `SELECT uuid, worker, status, attempts, max_retries FROM dispatch_tasks`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]chaosTask{}
	for rows.Next() {
		var id string
		var ct chaosTask
		if err := rows.Scan(&id, &ct.worker, &ct.status, &ct.attempts, &ct.maxRetries); err != nil {
			t.Fatal(err)
		}
		out[id] = ct
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type chaosReport struct {
	starts    int
	byStatus  map[Status]int
	peak      map[string]int
	peakAll   int
	inFlight  map[string]int // by killed node: attempts started there and not finished when it died
	again     map[string]int // of those, dispatched again
	replyLost map[string]int // of those, finished: the finish was recorded, the node died before logging it
	// Totals over all kills.
	inFlightAll, againAll int
	dups                  int   // starts of a task after its first logged start
	explained             int   // of those, following the death of the node running the earlier attempt
	unstarted             int   // attempts the store counted whose listener never ran
	minDelay, maxDelay    int64 // from a kill to the next start of a task it caught in flight

	overCap  string   // the first instant a cap was exceeded, if any
	problems []string // every check that failed
}

// chaosAttempt is one attempt as the execution log tells it.
type chaosAttempt struct {
	worker, node, lease string
	start               int64 // S
	end                 int64 // E or C: the work is done or its context ended
	cut                 bool  // C: the context ended first
	finish              int64 // F: the finish is recorded
	rejected            bool  // X: FinishAttempt failed
}

// analyseChaos reads the execution log and checks it against the store and
// the kills.
//
// Caps: an attempt's hold [S, E] lies within the time the store counted its
// slots (S follows the claim; E precedes the FinishAttempt call); a hold
// cut by a kill is taken to end when the node was reaped, before its lease
// could lapse. So the holds overlap no more than the store's counts did,
// and a count over a cap here is a cap exceeded.
//
// Duplicates: a start of a task after an earlier logged start is explained
// only if the node running the earlier attempt was killed after that
// attempt started and before the later one did, with the earlier attempt's
// finish not recorded (no F) and its context not cut (no C).
func analyseChaos(execLog io.Reader, store map[string]chaosTask, caps map[string]int, global int, kills []chaosKill) (chaosReport, error) {
	killOf := map[string]chaosKill{}
	for _, k := range kills {
		killOf[k.node] = k
	}
	type key struct {
		uuid    string
		attempt int
	}
	rep := chaosReport{byStatus: map[Status]int{}, peak: map[string]int{}, inFlight: map[string]int{},
		again: map[string]int{}, replyLost: map[string]int{}, minDelay: -1}
	problem := func(format string, args ...any) { rep.problems = append(rep.problems, fmt.Sprintf(format, args...)) }
	atts := map[key]*chaosAttempt{}
	byTask := map[string][]int{}
	var cut, rejected int
	sc := bufio.NewScanner(execLog)
	for sc.Scan() {
		p := strings.Fields(sc.Text())
		if len(p) != 7 {
			return rep, fmt.Errorf("bad log line %q", sc.Text())
		}
		att, err1 := strconv.Atoi(p[3])
		ts, err2 := strconv.ParseInt(p[6], 10, 64)
		if err1 != nil || err2 != nil {
			return rep, fmt.Errorf("bad log line %q", sc.Text())
		}
		k := key{p[1], att}
		a := atts[k]
		if p[0] == "S" {
			if a != nil {
				problem("attempt %d of %s started twice (on %s and %s)", att, p[1], a.node, p[4])
				continue
			}
			atts[k] = &chaosAttempt{worker: p[2], node: p[4], lease: p[5], start: ts}
			byTask[p[1]] = append(byTask[p[1]], att)
			continue
		}
		if a == nil || a.node != p[4] {
			problem("log line for an attempt not started on that node: %q", sc.Text())
			continue
		}
		switch p[0] {
		case "E":
			a.end = ts
		case "C":
			a.end, a.cut = ts, true
			cut++
		case "F":
			a.finish = ts
		case "X":
			a.rejected = true
			rejected++
		default:
			return rep, fmt.Errorf("bad log line %q", sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return rep, err
	}
	if cut > 0 || rejected > 0 {
		problem("%d attempts had their context cut and %d finishes were rejected on live nodes: a lease was lost or an attempt timed out, which no kill explains", cut, rejected)
	}

	// Caps, from the holds.
	type ev struct {
		at     int64
		delta  int
		worker string
	}
	var evs []ev
	for k, a := range atts {
		rep.starts++
		end := a.end
		if end == 0 {
			kl, ok := killOf[a.node]
			if !ok {
				problem("attempt %d of %s on %s never ended, and that node was not killed", k.attempt, k.uuid, a.node)
				continue
			}
			end = kl.dead
		}
		evs = append(evs, ev{a.start, 1, a.worker}, ev{end, -1, a.worker})
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
			rep.overCap = fmt.Sprintf("at %d worker %s had %d running, over its cap %d", e.at, e.worker, running[e.worker], caps[e.worker])
			problem("%s", rep.overCap)
			break
		}
		if all > global {
			rep.overCap = fmt.Sprintf("at %d %d tasks ran, over the global cap %d", e.at, all, global)
			problem("%s", rep.overCap)
			break
		}
		rep.peak[e.worker] = max(rep.peak[e.worker], running[e.worker])
		rep.peakAll = max(rep.peakAll, all)
	}

	// Every task, against the store.
	killedBetween := func(from, to int64) bool {
		for _, k := range kills {
			if from < k.dead && k.dead < to {
				return true
			}
		}
		return false
	}
	for uuid, st := range store {
		rep.byStatus[st.status]++
		as := byTask[uuid]
		sort.Ints(as)
		last := 0
		if len(as) > 0 {
			last = as[len(as)-1]
		}
		switch {
		case st.status == StatusFinished:
			// The finishing attempt is the last one started, and its
			// work was done before its Finish.
			if len(as) == 0 || last != st.attempts || atts[key{uuid, last}].end == 0 || atts[key{uuid, last}].cut {
				problem("task %s finished at attempt %d; the log shows attempts %v, the last without its work done", uuid, st.attempts, as)
				continue
			}
		case st.status == StatusFailed && st.attempts == st.maxRetries+1:
			// Failed after its retries.
		default:
			problem("task %s ended %s after %d attempts (max retries %d), want finished or failed after its retries", uuid, st.status, st.attempts, st.maxRetries)
			continue
		}
		if last > st.attempts {
			problem("task %s: the log shows attempt %d, the store %d", uuid, last, st.attempts)
		}
		// The caps above count each attempt against the worker it logged.
		for _, n := range as {
			if w := atts[key{uuid, n}].worker; w != st.worker {
				problem("task %s of worker %s: attempt %d logged as worker %s", uuid, st.worker, n, w)
			}
		}
		// Attempts claimed whose listener never ran: their node died
		// between the claim and the listener, so a kill must come
		// between the previous start and the next.
		prev := int64(0)
		for i, n := range as {
			want := n - 1
			if i > 0 {
				want = n - as[i-1] - 1
			}
			if want > 0 {
				rep.unstarted += want
				if !killedBetween(prev, atts[key{uuid, n}].start) {
					problem("task %s: attempts before %d never started, and no node died before it", uuid, n)
				}
			}
			prev = atts[key{uuid, n}].start
		}
		// Every start after the first.
		for i := 1; i < len(as); i++ {
			rep.dups++
			a, next := atts[key{uuid, as[i-1]}], atts[key{uuid, as[i]}]
			kl, killed := killOf[a.node]
			if !killed || a.finish != 0 || a.cut || a.rejected || kl.dead <= a.start || kl.dead >= next.start {
				problem("task %s started again (attempt %d on %s at %d) after attempt %d on %s under lease %s (start %d, end %d, finish %d, cut %v), whose node did not die while it ran (killed: %v at %d)",
					uuid, as[i], next.node, next.start, as[i-1], a.node, a.lease, a.start, a.end, a.finish, a.cut, killed, kl.dead)
				continue
			}
			rep.explained++
			delay := next.start - kl.sent
			if rep.minDelay < 0 || delay < rep.minDelay {
				rep.minDelay = delay
			}
			rep.maxDelay = max(rep.maxDelay, delay)
		}
		// Every attempt a kill caught in flight: dispatched again, or
		// its finish was recorded just before the kill.
		for _, n := range as {
			a := atts[key{uuid, n}]
			if _, killed := killOf[a.node]; !killed || a.finish != 0 || a.cut || a.rejected {
				continue
			}
			rep.inFlight[a.node]++
			rep.inFlightAll++
			switch {
			case st.attempts > n:
				rep.again[a.node]++
				rep.againAll++
			case st.status == StatusFinished && a.end != 0:
				rep.replyLost[a.node]++
			case st.status == StatusFailed:
				// Its last attempt died with its node.
			default:
				problem("task %s: attempt %d was in flight when %s was killed, and was neither dispatched again nor finished", uuid, n, a.node)
			}
		}
	}
	for _, k := range kills {
		if rep.again[k.node] == 0 {
			problem("the kill of %s caught %d attempts in flight and none was dispatched again", k.node, rep.inFlight[k.node])
		}
	}
	return rep, nil
}

// TestChaosAnalysis feeds analyseChaos small logs, so that a check that
// could never fail is caught here and not in a two-minute run.
func TestChaosAnalysis(t *testing.T) {
	caps := map[string]int{"t1": 2, "t2": 2}
	const global = 3
	// A ran u1 and, after B's kill, u2 again; B was killed running u2.
	good := `S u1 t1 1 A A-1 100
S u2 t1 1 B B-1 200
E u1 t1 1 A A-1 300
F u1 t1 1 A A-1 310
S u2 t1 2 A A-1 6000
E u2 t1 2 A A-1 6100
F u2 t1 2 A A-1 6110
`
	killB := []chaosKill{{node: "B", sent: 900, dead: 1000}}
	finished := map[string]chaosTask{
		"u1": {worker: "t1", status: StatusFinished, attempts: 1, maxRetries: 3},
		"u2": {worker: "t1", status: StatusFinished, attempts: 2, maxRetries: 3},
	}
	cases := []struct {
		name  string
		log   string
		store map[string]chaosTask
		kills []chaosKill
		want  string // a problem that must be reported; "" for none
	}{
		{"explained", good, finished, killB, ""},
		{"no kill", good, finished, nil, "whose node did not die"},
		{"killed after the next start", good, finished, []chaosKill{{node: "B", sent: 6500, dead: 7000}}, "whose node did not die"},
		{"finish recorded", good + "F u2 t1 1 B B-1 250\n", finished, killB, "whose node did not die"},
		{"context cut", good + "C u2 t1 1 B B-1 250\n", finished, killB, "context cut"},
		{"kill caught nothing", good, finished, append(killB, chaosKill{node: "C", sent: 1, dead: 2}), "the kill of C caught 0"},
		{"never ended", good, finished, []chaosKill{{node: "A", sent: 1, dead: 2}}, "never ended"},
		{"not finished", good, map[string]chaosTask{
			"u1": finished["u1"],
			"u2": {worker: "t1", status: StatusWaiting, attempts: 2, maxRetries: 3},
		}, killB, "want finished or failed"},
		{"failed too early", good, map[string]chaosTask{
			"u1": finished["u1"],
			"u2": {worker: "t1", status: StatusFailed, attempts: 2, maxRetries: 3},
		}, killB, "want finished or failed"},
		{"finished without its work", good, map[string]chaosTask{
			"u1": finished["u1"],
			"u2": {worker: "t1", status: StatusFinished, attempts: 3, maxRetries: 3},
		}, killB, "finished at attempt 3"},
		{"wrong worker", good, map[string]chaosTask{
			"u1": {worker: "t2", status: StatusFinished, attempts: 1, maxRetries: 3},
			"u2": finished["u2"],
		}, killB, "logged as worker t1"},
		{"unstarted attempt, no kill before", `S u1 t1 2 A A-1 100
E u1 t1 2 A A-1 200
F u1 t1 2 A A-1 210
`, map[string]chaosTask{"u1": {worker: "t1", status: StatusFinished, attempts: 2, maxRetries: 3}}, nil, "never started"},
		{"worker cap", `S u1 t1 1 A A-1 100
S u2 t1 1 A A-1 110
S u3 t1 1 A A-1 120
E u1 t1 1 A A-1 200
E u2 t1 1 A A-1 200
E u3 t1 1 A A-1 200
`, nil, nil, "over its cap 2"},
		{"global cap", `S u1 t1 1 A A-1 100
S u2 t1 1 A A-1 110
S u3 t2 1 A A-1 120
S u4 t2 1 A A-1 130
E u1 t1 1 A A-1 200
E u2 t1 1 A A-1 200
E u3 t2 1 A A-1 200
E u4 t2 1 A A-1 200
`, nil, nil, "over the global cap 3"},
		{"slot reused at the same instant", `S u1 t1 1 A A-1 100
S u2 t1 1 A A-1 110
E u1 t1 1 A A-1 200
S u3 t1 1 A A-1 200
E u2 t1 1 A A-1 300
E u3 t1 1 A A-1 300
`, nil, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := analyseChaos(strings.NewReader(c.log), c.store, caps, global, c.kills)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if len(rep.problems) > 0 {
					t.Fatalf("problems %q, want none", rep.problems)
				}
				return
			}
			for _, p := range rep.problems {
				if strings.Contains(p, c.want) {
					return
				}
			}
			t.Fatalf("problems %q, want one with %q", rep.problems, c.want)
		})
	}
	rep, err := analyseChaos(strings.NewReader(good), finished, caps, global, killB)
	if err != nil {
		t.Fatal(err)
	}
	if rep.dups != 1 || rep.explained != 1 || rep.inFlight["B"] != 1 || rep.again["B"] != 1 || rep.minDelay != 5100 || rep.peak["t1"] != 2 {
		t.Errorf("report %+v, want 1 duplicate, B's attempt in flight and dispatched again 5100 ns after the kill, t1 peaking at 2", rep)
	}
	if _, err := analyseChaos(strings.NewReader("S u1 t1 x A A-1 100\n"), nil, caps, global, nil); err == nil {
		t.Error("a bad line was accepted")
	}
}
