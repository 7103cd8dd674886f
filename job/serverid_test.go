package job_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// An id that a live scheduler holds is refused at once, with a message
// naming the process that holds it: not after a session timeout, and
// never by waiting silently.
func TestServerIDHeldByALiveProcessIsRefusedAtOnce(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("held", 2)
	startJobs(t, ns, "same", []job.Config{cfg}, rec)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "same")
	defer rc.Close()
	if err := s.Add(ctx, cfg, rec.job("same")); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	err := s.Start(ctx)
	took := time.Since(began)
	if !errors.Is(err, job.ErrServerIDInUse) {
		t.Fatalf("second scheduler with the id: %v, want ErrServerIDInUse", err)
	}
	host, _ := os.Hostname()
	if want := fmt.Sprintf("pid %d on host %q", os.Getpid(), host); !strings.Contains(err.Error(), want) {
		t.Errorf("the error does not name the holder (%s): %v", want, err)
	}
	// The session timeout here is 4 s; refusing at once is well under it.
	if took > 3*time.Second {
		t.Errorf("refused after %v; it waited instead of refusing at once", took)
	}
	t.Logf("refused in %v: %v", took.Round(time.Millisecond), err)
}

// An id whose holder is a process of this host that is gone (its session
// not yet expired) is taken over at once: its instance node and status
// nodes are replaced without waiting for the session to end.
func TestServerIDOfADeadProcessOfThisHostIsTakenOver(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("taken", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A session that stays alive, holding what a killed process left: its
	// instance node naming a pid that does not exist, and a status node.
	ghost, err := regcenter.Open(ctx, onRegistry(regcenter.Config{Namespace: ns, SessionTimeout: 30 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	defer ghost.Close()
	host, _ := os.Hostname()
	node := fmt.Sprintf(`{"faultTolerance":1,"holder":{"host":%q,"pid":%d,"process":"feedfacefeedface","token":"0123456789abcdef"}}`, host, deadPID(t))
	if _, err := ghost.Create(ctx, "/.placement/instances/same", []byte(node), regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	if _, err := ghost.Create(ctx, "/taken/servers/same/status", []byte("READY"), regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	startJobs(t, ns, "same", []job.Config{cfg}, rec)
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("start took %v: it waited for the dead process's 30 s session", took)
	}
	rec.waitFires(t, time.Now(), 1, 2, 20*time.Second)
}

// deadPID returns a pid that no process has.
func deadPID(t *testing.T) int {
	for pid := 4_000_000; pid > 3_000_000; pid -= 7919 {
		if p, err := os.FindProcess(pid); err == nil && p.Signal(syscallZero) != nil {
			return pid
		}
	}
	t.Fatal("no free pid found")
	return 0
}

var syscallZero = syscall.Signal(0)
