package regcenter_test

import (
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// TestEtcdSessionOutlivesAFrozenMember: a follower of three stopped
// (SIGSTOP) past the lease — its connections open, nothing answering, as a
// member cut off by the network — costs no session: the keepalives that
// hang on it are abandoned and sent again through the others before the
// fencing lease lapses. (Followers only: a frozen leader adds an election,
// which the lease may or may not outlive on a loaded machine.)
func TestEtcdSessionOutlivesAFrozenMember(t *testing.T) {
	cluster := etcdtest.Start(t, etcdtest.WithSize(3))
	const timeout = 4 * time.Second
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "frozen", SessionTimeout: timeout})
	events := make(chan regcenter.SessionEvent, 64)
	defer c.OnSession(func(ev regcenter.SessionEvent) { events <- ev })()
	s := c.Session()
	// Each follower in turn: the client's keepalives go to every member.
	for i := range cluster.Size() {
		if leader, err := cluster.Leader(testCtx(t)); err != nil {
			t.Fatal(err)
		} else if i == leader {
			continue
		}
		if err := cluster.Pause(i); err != nil {
			t.Fatal(err)
		}
		time.Sleep(timeout + time.Second) // the fault's length, not an assertion
		if err := cluster.Resume(i); err != nil {
			t.Fatal(err)
		}
		if err := cluster.WaitServing(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if err := s.Check(); err != nil {
			t.Fatalf("member %d frozen for %v: the session was lost: %v", i, timeout+time.Second, err)
		}
	}
	for {
		select {
		case ev := <-events:
			if ev.Type == regcenter.SessionLost {
				t.Fatalf("session event %v while one member of three was frozen", ev.Type)
			}
		default:
			return
		}
	}
}
