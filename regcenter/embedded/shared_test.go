package embedded_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/embedded"
)

// envSharedChild names the Dir a child process of TestSharedDirSurvivesKillOfHost
// joins; the test runs its own binary again with it set.
const envSharedChild = "SHARDJOB_TEST_SHARED_DIR_CHILD"

// TestSharedDirChild is the body of a child process of
// TestSharedDirSurvivesKillOfHost (it does nothing in a plain run): it
// joins the shared Dir, runs a job of four items every second and prints
// every run's start and end on stdout, until SIGTERM.
func TestSharedDirChild(t *testing.T) {
	dir := os.Getenv(envSharedChild)
	if dir == "" {
		t.Skip("the child of TestSharedDirSurvivesKillOfHost")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	jctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	shared, err := embedded.Join(jctx, embedded.Config{Dir: dir, Namespace: "shared", SessionTimeout: 3 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	var mu sync.Mutex
	say := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", a...)
	}
	defer shared.OnSession(func(ev regcenter.SessionEvent) {
		say("session %d %d", ev.Type, time.Now().UnixNano())
	})()
	sched, err := job.NewScheduler(shared, job.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context, sc job.ShardingContext) error {
		say("start %d %d %d %d", sc.Item, sc.FireTime.UnixMilli(), sc.Through.UnixMilli(), time.Now().UnixNano())
		t := time.NewTimer(300 * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			say("end %d %d %d %d ok", sc.Item, sc.FireTime.UnixMilli(), sc.Through.UnixMilli(), time.Now().UnixNano())
			return nil
		case <-ctx.Done():
			say("end %d %d %d %d cancelled", sc.Item, sc.FireTime.UnixMilli(), sc.Through.UnixMilli(), time.Now().UnixNano())
			return ctx.Err()
		}
	}
	cfg := job.Config{Name: "four", Cron: "* * * * * *", ShardingTotalCount: 4, Failover: true}
	if err := sched.Add(jctx, cfg, job.SimpleFunc(run)); err != nil {
		t.Fatal(err)
	}
	if err := sched.Start(jctx); err != nil {
		t.Fatal(err)
	}
	say("joined %v", shared.Hosting())
	<-ctx.Done()
	sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer scancel()
	if err := sched.Shutdown(sctx); err != nil {
		t.Error(err)
	}
}

// sharedRun is one execution a child printed.
type sharedRun struct {
	proc          int
	item          int
	fire, through int64 // unix ms
	start, end    int64 // unix ns; end 0 while running
	ok            bool
}

// TestSharedDirSurvivesKillOfHost: three processes join one Dir and run a
// job of four items every second; the first hosts the member. After
// kill -9 of the host another process takes the member over and the
// others reconnect: every fire of every item in the window runs to the
// end somewhere (no fire lost), and no item's runs overlap in time across
// the processes.
func TestSharedDirSurvivesKillOfHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three processes for about 30s")
	}
	dir := t.TempDir()
	var (
		mu       sync.Mutex
		runs     []*sharedRun
		joined   = map[int]bool{}     // proc → hosting
		sessions []string             // the children's session events, for the log
		other    = map[int][]string{} // the children's other lines: the test's own
		change   = make(chan struct{}, 1)
	)
	kick := func() {
		select {
		case change <- struct{}{}:
		default:
		}
	}
	var readers sync.WaitGroup
	var cmds []*exec.Cmd
	start := func(proc int) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSharedDirChild$", "-test.v")
		cmd.Env = append(os.Environ(), envSharedChild+"="+dir)
		errLog, err := os.Create(fmt.Sprintf("%s/../child%d.log", dir, proc))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { errLog.Close() })
		cmd.Stderr = errLog
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		readers.Add(1)
		go func() {
			defer readers.Done()
			sc := bufio.NewScanner(out)
			open := map[[3]int64]*sharedRun{}
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) == 0 {
					continue
				}
				mu.Lock()
				switch {
				case f[0] != "start" && f[0] != "end" && f[0] != "joined" && f[0] != "session":
					other[proc] = append(other[proc], sc.Text())
				case f[0] == "joined" && len(f) == 2:
					joined[proc] = f[1] == "true"
				case f[0] == "session" && len(f) == 3:
					sessions = append(sessions, fmt.Sprintf("process %d: session event %s at %s", proc, f[1], f[2]))
				case (f[0] == "start" || f[0] == "end") && len(f) >= 5:
					var n [4]int64
					for i := range n {
						n[i], _ = strconv.ParseInt(f[i+1], 10, 64)
					}
					key := [3]int64{n[0], n[1], n[2]}
					if f[0] == "start" {
						r := &sharedRun{proc: proc, item: int(n[0]), fire: n[1], through: n[2], start: n[3]}
						open[key] = r
						runs = append(runs, r)
					} else if r := open[key]; r != nil {
						r.end, r.ok = n[3], len(f) > 5 && f[5] == "ok"
						delete(open, key)
					}
				}
				mu.Unlock()
				kick()
			}
			io.Copy(io.Discard, out)
		}()
	}
	// waitFor waits, on the children's lines, until cond holds.
	waitFor := func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.NewTimer(limit)
		defer deadline.Stop()
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			select {
			case <-change:
			case <-deadline.C:
				t.Fatalf("%s: not within %v", what, limit)
			}
		}
	}
	// doneAfter reports whether every item has a run that ended well for
	// a fire at or after ms.
	doneAfter := func(ms int64) bool {
		seen := map[int]bool{}
		for _, r := range runs {
			if r.ok && r.through >= ms {
				seen[r.item] = true
			}
		}
		return len(seen) == 4
	}

	start(0)
	waitFor("the first process joins", time.Minute, func() bool { _, ok := joined[0]; return ok })
	mu.Lock()
	if !joined[0] {
		t.Fatal("the first process on the Dir does not host its member")
	}
	mu.Unlock()
	start(1)
	start(2)
	waitFor("all three join", time.Minute, func() bool { return len(joined) == 3 })
	mu.Lock()
	if joined[1] || joined[2] {
		t.Fatalf("a second host on one Dir: %v", joined)
	}
	mu.Unlock()
	allIn := time.Now().UnixMilli()
	waitFor("every item runs after all joined", time.Minute, func() bool { return doneAfter(allIn + 2000) })

	killed := time.Now()
	if err := cmds[0].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmds[0].Wait()
	// The member's new host keeps the dead host's lease for a session
	// timeout; its items then fail over.
	waitFor("every item runs again after the kill", time.Minute, func() bool { return doneAfter(killed.UnixMilli() + 6000) })
	mu.Lock()
	windowEnd := killed.UnixMilli() + 6000
	mu.Unlock()
	// The clients stop first, then the member's new host: processes that
	// stop at once may see the member go mid-request (see Shared.Close).
	host, _ := os.ReadFile(filepath.Join(dir, embedded.HostFile))
	order := []int{1, 2}
	if strings.HasPrefix(string(host), fmt.Sprintf("pid %d ", cmds[1].Process.Pid)) {
		order = []int{2, 1}
	}
	exits := map[int]error{}
	for _, i := range order {
		c := cmds[i]
		c.Process.Signal(syscall.SIGTERM)
		exits[i] = c.Wait()
	}
	readers.Wait()
	for _, i := range order {
		if exits[i] != nil {
			t.Errorf("process %d: %v:\n%s", i, exits[i], strings.Join(other[i], "\n"))
		}
	}

	mu.Lock()
	defer mu.Unlock()
	// The killed process's runs ended with it.
	for _, r := range runs {
		if r.end == 0 {
			r.end = time.Now().UnixNano()
			if r.proc == 0 {
				r.end = killed.UnixNano()
			}
		}
	}
	// No item's runs overlap.
	byItem := map[int][]*sharedRun{}
	for _, r := range runs {
		byItem[r.item] = append(byItem[r.item], r)
	}
	for item, rs := range byItem {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start < rs[j].start })
		for i := 1; i < len(rs); i++ {
			if rs[i].start < rs[i-1].end {
				t.Errorf("item %d ran at once in process %d (fire %d, from %d) and process %d (fire %d, until %d)",
					item, rs[i].proc, rs[i].fire, rs[i].start, rs[i-1].proc, rs[i-1].fire, rs[i-1].end)
			}
		}
	}
	// Every fire from two seconds after all joined to the window's end
	// ran to the end for every item.
	first := (allIn/1000 + 2) * 1000
	for item := range 4 {
		for fire := first; fire <= windowEnd/1000*1000; fire += 1000 {
			covered := false
			for _, r := range byItem[item] {
				if r.ok && r.fire <= fire && fire <= r.through {
					covered = true
					break
				}
			}
			if !covered {
				t.Errorf("item %d: the fire of %s never ran to the end (killed at %s)", item,
					time.UnixMilli(fire).UTC().Format("15:04:05.000"), killed.UTC().Format("15:04:05.000"))
			}
		}
	}
	// How the survivors' sessions fared is the machine's business (a
	// slow take-over lapses a fencing lease, and a new session follows
	// on the same lease); the log says, for the curious.
	t.Logf("killed at %d; %s", killed.UnixNano(), strings.Join(sessions, "; "))
	if t.Failed() {
		for _, r := range runs {
			t.Logf("proc %d item %d fire %s through %s ok %v", r.proc, r.item, time.UnixMilli(r.fire).UTC().Format("15:04:05"),
				time.UnixMilli(r.through).UTC().Format("15:04:05"), r.ok)
		}
	}
}
