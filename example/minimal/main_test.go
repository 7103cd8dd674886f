package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter/zktest"
)

// Two copies of this program on one machine, with no flag and no id set,
// both run and share the job's items: each fire's four items run once,
// some on each process.
func TestTwoCopiesOnOneHostShareTheItems(t *testing.T) {
	zk := zktest.Start(t)
	bin := filepath.Join(t.TempDir(), "minimal")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	line := regexp.MustCompile(`^(\S+): item (\d) \(\w+\) of fire (\d\d:\d\d:\d\d)$`)
	type run struct{ server, fire, item string }
	var (
		mu   sync.Mutex
		runs []run
		wg   sync.WaitGroup
	)
	var procs []*exec.Cmd
	for range 2 {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "SHARDJOB_REGCENTER_SERVERS="+zk.ConnectString())
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if m := line.FindStringSubmatch(sc.Text()); m != nil {
					mu.Lock()
					runs = append(runs, run{server: m[1], item: m[2], fire: m[3]})
					mu.Unlock()
				}
			}
		}()
	}
	stop := func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
		done := make(chan struct{})
		go func() {
			wg.Wait()
			for _, p := range procs {
				_ = p.Wait()
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			for _, p := range procs {
				_ = p.Process.Kill()
			}
			t.Error("the programs did not stop within 40 s of SIGTERM")
		}
	}
	defer stop()

	// A fire whose four items ran once each, on both processes.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		mu.Lock()
		byFire := map[string]map[string]string{} // fire → item → server
		twice := ""
		for _, r := range runs {
			if byFire[r.fire] == nil {
				byFire[r.fire] = map[string]string{}
			}
			if _, dup := byFire[r.fire][r.item]; dup {
				twice = r.fire + " item " + r.item
			}
			byFire[r.fire][r.item] = r.server
		}
		mu.Unlock()
		if twice != "" {
			t.Fatalf("fire %s ran twice", twice)
		}
		for fire, items := range byFire {
			servers := map[string]bool{}
			for _, s := range items {
				servers[s] = true
			}
			if len(items) == 4 && len(servers) == 2 {
				t.Logf("fire %s: %v", fire, items)
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no fire ran its four items over both processes within 60 s: %v", byFire)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
