package proc

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A signal reaches the whole process group: the shell's background child
// dies with it, and the reader sees the output.
func TestKillReachesTheGroup(t *testing.T) {
	child := make(chan int, 1)
	p, err := Start("sh", exec.Command("sh", "-c", "sleep 60 & echo $!; wait"), func(r io.Reader) {
		sc := bufio.NewScanner(r)
		if sc.Scan() {
			pid, _ := strconv.Atoi(sc.Text())
			child <- pid
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	select {
	case pid = <-child:
	case <-p.Done():
		t.Fatalf("sh exited before printing its child: %v", p.Err())
	case <-time.After(10 * time.Second):
		t.Fatal("no child pid within 10s")
	}
	if pid <= 0 {
		t.Fatalf("bad child pid %d", pid)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if p.Alive() {
		t.Error("alive after Kill")
	}
	// The child was in the group: it is gone (or a zombie about to be
	// reaped by init), never still sleeping.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if err == syscall.ESRCH || zombie(pid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group's child %d survived SIGKILL to the group", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("signal to a reaped group: %v", err)
	}
}

// Stop ends a process that exits on SIGTERM without killing it.
func TestStopTerminates(t *testing.T) {
	p, err := Start("sleep", exec.Command("sleep", "60"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Alive() || p.Err() == nil {
		t.Errorf("after Stop: alive %v, err %v", p.Alive(), p.Err())
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return b[i+2] == 'Z'
		}
	}
	return false
}
