//go:build unix

package etcdtest_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// TestCluster kills, pauses, restarts and wipes members of a three-member
// cluster, and leaves no process behind.
func TestCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := etcdtest.StartCluster(ctx, etcdtest.Options{Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for i := range c.Size() {
		if pid := c.PID(i); pid == 0 {
			t.Fatalf("member %d has no process", i)
		} else {
			pids = append(pids, pid)
		}
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(ctx); err != nil {
		t.Fatalf("no new leader after the old one was killed: %v", err)
	}
	if err := c.StartMember(ctx, leader); err != nil {
		t.Fatal(err)
	}
	pids = append(pids, c.PID(leader))
	if err := c.Pause(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Resume(0); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartWiped(ctx, 1); err != nil {
		t.Fatal(err)
	}
	pids = append(pids, c.PID(1))
	if err := c.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	cli, err := c.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/k", "v"); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("member process %d still exists after Close (kill 0: %v)", pid, err)
		}
	}
}
