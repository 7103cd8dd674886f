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
)

// The README's program runs as written with nothing installed: the first
// copy, with no registry named, hosts an etcd member inside itself and says
// where; a second copy pointed there joins it, and the two share the job's
// items: each fire's four items run once, some on each process. When they
// stop, the member's data directory is gone.
func TestTwoCopiesShareTheItemsOnTheEmbeddedRegistry(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "quickstart")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tmp := t.TempDir() // the copies' TMPDIR, where the member's data goes
	line := regexp.MustCompile(`^(\S+): item (\d) \(\w+\) of fire (\d\d:\d\d:\d\d)$`)
	joinLine := regexp.MustCompile(`SHARDJOB_REGCENTER_EMBEDDEDDIR=(\S+)$`)
	type run struct{ server, fire, item string }
	var (
		mu   sync.Mutex
		runs []run
	)
	endpoint := make(chan string, 1)
	var procs []*exec.Cmd
	var eofs []chan struct{} // closed when a copy's output ends
	start := func(dir string) {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "SHARDJOB_REGCENTER_SERVERS=", "SHARDJOB_REGCENTER_ETCD=", "SHARDJOB_REGCENTER_EMBEDDEDDIR="+dir)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		eof := make(chan struct{})
		eofs = append(eofs, eof)
		go func() {
			defer close(eof)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if m := joinLine.FindStringSubmatch(sc.Text()); m != nil {
					endpoint <- m[1]
				}
				if m := line.FindStringSubmatch(sc.Text()); m != nil {
					mu.Lock()
					runs = append(runs, run{server: m[1], item: m[2], fire: m[3]})
					mu.Unlock()
				}
			}
		}()
	}
	// The joiners stop first, the host of the registry last.
	stop := func() {
		for i := len(procs) - 1; i >= 0; i-- {
			_ = procs[i].Process.Signal(syscall.SIGTERM)
			select {
			case <-eofs[i]:
			case <-time.After(40 * time.Second):
				_ = procs[i].Process.Kill()
				t.Errorf("copy %d did not stop within 40 s of SIGTERM", i+1)
				<-eofs[i]
			}
			if err := procs[i].Wait(); err != nil {
				t.Errorf("copy %d: %v", i+1, err)
			}
		}
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	start("")
	select {
	case ep := <-endpoint:
		start(ep)
	case <-time.After(60 * time.Second):
		t.Fatal("the first copy did not say where its registry is within 60 s")
	}

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
				stopped = true
				stop()
				if left, _ := os.ReadDir(tmp); len(left) > 0 {
					t.Errorf("after both copies stopped, %s holds %v: want the member's data removed", tmp, left)
				}
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
