package etcd_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

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

// TestEtcdCenterFollowsAFrozenLeadersRevocation: the leader of three
// stopped (SIGSTOP) past the lease TTL, while the other two elect a new
// leader and answer keepalives, may revoke on resuming every lease it saw
// no keepalive for: its lessor, still primary, finds them expired at once,
// and the server's leadership check (etcd's etcdserver/server.go,
// revokeExpiredLeases and ensureLeadership) trusts a tick taken within three
// tick intervals — a process resuming from SIGSTOP ticks at once — so the
// revocation is proposed, forwarded to the new leader as the old one steps
// down, and applied. Whether it wins that race varies from run to run.
// Either way the center must agree with etcd: when etcd no longer has the
// session's lease, the session ends (lost to the server, whatever the
// fencing lease says) and a new one starts on a lease etcd has; when etcd
// still has it, the session goes on.
func TestEtcdCenterFollowsAFrozenLeadersRevocation(t *testing.T) {
	cluster := etcdtest.Start(t, etcdtest.WithSize(3))
	const timeout = 4 * time.Second
	ctx := testCtx(t)
	leader, err := cluster.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "frozenleader", SessionTimeout: timeout})
	events := make(chan regcenter.SessionEvent, 64)
	defer c.OnSession(func(ev regcenter.SessionEvent) { events <- ev })()
	s := c.Session()

	if err := cluster.Pause(leader); err != nil {
		t.Fatal(err)
	}
	time.Sleep(timeout + 2*time.Second) // the fault's length, not an assertion
	liveAtResume := s.Check()
	if err := cluster.Resume(leader); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	cli, err := cluster.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// A revocation is applied a moment after the resume; give it a TTL.
	gone := false
	for range int(timeout / (100 * time.Millisecond)) {
		ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(s.ID()))
		if err != nil {
			t.Fatal(err)
		}
		if gone = ttl.TTL <= 0; gone {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !gone {
		t.Logf("etcd kept the lease (session at the resume: %v)", liveAtResume)
		// The center may have ended the session itself, its fencing lease
		// lapsed while the election outlasted two thirds of the TTL (the
		// fence working), but not as revoked by etcd; and it serves a
		// live session again, on the lease etcd kept.
		if err := s.Err(); err != nil && strings.Contains(err.Error(), "expired in etcd") {
			t.Fatalf("etcd kept the lease, the center says it expired there: %v", err)
		}
		for c.Session().Check() != nil {
			select {
			case <-ctx.Done():
				t.Fatalf("etcd kept the lease; the center has no live session: %v", c.Session().Check())
			case <-time.After(50 * time.Millisecond):
			}
		}
		if got := c.Session().ID(); got != s.ID() {
			t.Errorf("live session on lease %x, want the lease etcd kept, %x", got, s.ID())
		}
		return
	}
	t.Logf("etcd revoked the lease after the resume (session at the resume: %v)", liveAtResume)
	select {
	case <-s.Done():
	case <-time.After(2 * timeout):
		t.Fatalf("etcd revoked lease %x; the center's session is still live", s.ID())
	}
	if liveAtResume == nil && !strings.Contains(s.Err().Error(), "expired in etcd") {
		t.Errorf("session lost to %v, want the server's revocation", s.Err())
	}
	for {
		select {
		case ev := <-events:
			if ev.Type != regcenter.SessionNew {
				continue
			}
			ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(ev.Session.ID()))
			if err != nil {
				t.Fatal(err)
			}
			if ttl.TTL <= 0 {
				t.Fatalf("the new session's lease %x is not in etcd", ev.Session.ID())
			}
			return
		case <-time.After(2 * timeout):
			t.Fatal("no new session after the revocation")
		}
	}
}

// TestEtcdWriteLandsWhileTheLeaderIsFrozen: a write sent as the leader
// freezes (its connections open, nothing answering) is forwarded to it by
// a follower, or sent to it, and would hang until the request's deadline,
// the session timeout, though the others elect a new leader long before.
// While keepalives go unanswered as well, a request with no answer for a
// fifth of the lease's TTL is abandoned with ErrConnectionLoss (its outcome
// unknown, as for any request without an answer), so that the caller's
// next attempt, through another member, lands within the session.
func TestEtcdWriteLandsWhileTheLeaderIsFrozen(t *testing.T) {
	cluster := etcdtest.Start(t, etcdtest.WithSize(3))
	// The session must outlast the others' election (a second or two, more
	// on a loaded machine under -race) plus a switch of members: its fence
	// falls at two thirds of the timeout. An abandoned attempt waits a
	// fifth of it, far less than the timeout a hang would take.
	const timeout = 9 * time.Second
	ctx := testCtx(t)
	c := newEtcdCenter(t, cluster, regcenter.Config{Namespace: "frozenwrite", SessionTimeout: timeout})
	if _, err := c.Create(ctx, "/w", []byte("0"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	leader, err := cluster.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Session()
	if err := cluster.Pause(leader); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := cluster.Resume(leader); err != nil {
				t.Error(err)
			}
		}
	}
	defer resume()
	var attempts []string
	for {
		_, err := c.Set(ctx, "/w", []byte("1"), -1)
		if err == nil {
			break
		}
		attempts = append(attempts, err.Error())
		if !errors.Is(err, regcenter.ErrConnectionLoss) || len(attempts) == 100 {
			t.Fatalf("write attempts while the leader is frozen: %q", attempts)
		}
		time.Sleep(50 * time.Millisecond) // a caller's pause before it tries again
	}
	// The session the write was sent under is the one still live: the
	// leader is frozen yet (its lease revocation on resuming is another
	// matter: TestEtcdCenterFollowsAFrozenLeadersRevocation).
	sessErr := s.Err()
	resume()
	if err := cluster.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range attempts {
		if strings.Contains(a, "no answer within the session timeout") {
			t.Errorf("an attempt waited out the session timeout: %q", attempts)
			break
		}
	}
	if sessErr != nil {
		t.Errorf("the write landed after its session ended (%v); attempts %q", sessErr, attempts)
	}
	t.Logf("attempts before the write landed: %q", attempts)
}
