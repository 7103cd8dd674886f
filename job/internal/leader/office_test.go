package leader

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/reshard"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// TestTheOfficeOnARealRegistry: elected, the leader flags a reshard and
// arms its watches; a membership check flags one when nothing is known
// of the last reshard or a server joined, and none while the servers are
// those of the last reshard; revoked, it drops every watch.
func TestTheOfficeOnARealRegistry(t *testing.T) {
	zc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: "office"}, regcenter.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	paths := layout.Job("j")
	for _, p := range []string{paths.ShardingEpoch(), paths.Flag("a", layout.Status), paths.Flag("b", layout.Status)} {
		if err := rc.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	var membership, requests atomic.Int64
	var soon atomic.Bool
	epochs := make(chan struct{}, 16) // a flag's creation seen
	o := &Office{
		Duties: NewDuties(), RC: rc, Paths: paths, Log: slog.New(slog.DiscardHandler),
		Leading:        func() bool { return true },
		Go:             func(f func()) bool { f(); return true },
		KickMembership: func() { membership.Add(1) },
		KickReshard:    func() { requests.Add(1) },
		KickEpoch: func() {
			select {
			case epochs <- struct{}{}:
			default:
			}
		},
		Soon: soon.Load,
	}
	flagged := takeFlag(t, ctx, rc, paths)

	o.Elected(ctx)
	if !flagged() {
		t.Error("elected: no reshard flagged")
	}
	if !o.Duties.Has(ServersWatch) || !o.Duties.Has(RequestWatch) || membership.Load() == 0 {
		t.Errorf("elected: servers watched %v, requests watched %v, membership checks asked %d",
			o.Duties.Has(ServersWatch), o.Duties.Has(RequestWatch), membership.Load())
	}
	if requests.Load() != 0 {
		t.Error("elected: the leader's own flag taken for a request")
	}

	if servers, ok := o.CheckMembership(ctx); !ok || len(servers) != 2 || !flagged() {
		t.Errorf("nothing known of the last reshard: servers %v (%v), want a, b and a reshard flagged", servers, ok)
	}
	o.Duties.SetSharded([]string{"a", "b"})
	if _, ok := o.CheckMembership(ctx); !ok || flagged() {
		t.Errorf("the servers of the last reshard: checked %v, flagged a reshard", ok)
	}
	if !o.Duties.Has("a") || !o.Duties.Has("b") {
		t.Error("the servers' flags are not watched")
	}
	if err := rc.EnsurePath(ctx, paths.Flag("c", layout.Status)); err != nil {
		t.Fatal(err)
	}
	if _, ok := o.CheckMembership(ctx); !ok || !flagged() {
		t.Errorf("a server joined: checked %v, no reshard flagged", ok)
	}

	// A server joins while a reshard runs here (its turn held): the check
	// waits for the reshard, and flags none when the reshard placed the
	// newcomer (a flag then would only reshard the same servers again).
	if err := rc.EnsurePath(ctx, paths.Flag("d", layout.Status)); err != nil {
		t.Fatal(err)
	}
	if err := o.Duties.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	checked := make(chan bool, 1)
	go func() { // ends with the check, once the turn is released below
		_, ok := o.CheckMembership(ctx)
		checked <- ok
	}()
	select {
	case <-checked:
		t.Error("a membership check ran while a reshard held the turn")
	case <-time.After(200 * time.Millisecond):
	}
	o.Duties.SetSharded([]string{"a", "b", "c", "d"})
	o.Duties.Release()
	if ok := <-checked; !ok || flagged() {
		t.Errorf("the reshard in flight placed the newcomer: checked %v, flagged a reshard again", ok)
	}

	// A reshard that keeps the turn (stuck in a registry outage) costs
	// the check half its time, not the check: it compares with the last
	// reshard without the turn, and flags the server that joined.
	if err := rc.EnsurePath(ctx, paths.Flag("e", layout.Status)); err != nil {
		t.Fatal(err)
	}
	if err := o.Duties.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	_, ok := o.CheckMembership(short)
	cancelShort()
	o.Duties.Release()
	if !ok || !flagged() {
		t.Errorf("a server joined while a reshard kept the turn: checked %v, no reshard flagged", ok)
	}

	// A flag created by another instance (a join) is answered at once
	// when the job fires soon, and left for its fire otherwise.
	created := func() {
		t.Helper()
		for len(epochs) > 0 {
			<-epochs
		}
		if _, err := rc.Create(ctx, paths.Necessary(), nil, regcenter.Persistent); err != nil {
			t.Fatal(err)
		}
		select {
		case <-epochs:
		case <-ctx.Done():
			t.Fatal("the flag's creation was not seen")
		}
		flagged()
	}
	before := requests.Load()
	created()
	if n := requests.Load() - before; n != 0 {
		t.Errorf("a join's flag, the job's fire far off: %d reshards asked at once, want none", n)
	}
	soon.Store(true)
	created()
	if n := requests.Load() - before; n != 1 {
		t.Errorf("a join's flag, the job about to fire: %d reshards asked at once, want one", n)
	}
	soon.Store(false)

	// Membership: with failover on, the servers read are queued and the
	// load table repaired, even when the queueing failed; off, neither.
	var queued reshard.Servers
	var queues, repairs int
	queueErr := errors.New("queue")
	failover := false
	o.Failover = func() bool { return failover }
	o.QueueDeparted = func(_ context.Context, s reshard.Servers) error { queued = s; queues++; return queueErr }
	o.Repair = func(context.Context) error { repairs++; return nil }
	o.Membership(ctx)
	if queues != 0 || repairs != 0 {
		t.Errorf("failover off: %d queueings, %d repairs; want none", queues, repairs)
	}
	failover = true
	o.Membership(ctx)
	if queues != 1 || repairs != 1 || len(queued) != 5 {
		t.Errorf("failover on: %d queueings of %v, %d repairs; want one of a, b, c, d, e and one", queues, queued, repairs)
	}

	o.Revoked()
	for _, key := range []string{ServersWatch, RequestWatch, "a", "b", "c"} {
		if o.Duties.Has(key) {
			t.Errorf("revoked: watch %q still armed", key)
		}
	}
	o.Leading = func() bool { return false }
	if _, ok := o.CheckMembership(ctx); ok {
		t.Error("checked the membership without leading")
	}
	o.Membership(ctx)
	if queues != 1 || repairs != 1 {
		t.Errorf("not leading: %d queueings, %d repairs; want none more", queues-1, repairs-1)
	}
}

// TestANewLeaderKeepsAnAssignmentThatHolds: elected, a leader whose
// inherited assignment holds for the servers online flags no reshard at
// its first membership check and counts those servers as the last
// reshard's (the next check flags none); it flags one when the assignment
// does not hold, when it cannot tell, and when a server's status node is
// no instance's.
func TestANewLeaderKeepsAnAssignmentThatHolds(t *testing.T) {
	ctx, rc := roomtest.ZooKeeper(t, "inherit")
	paths := layout.Job("j")
	for _, p := range []string{paths.ShardingEpoch(), paths.Server("a"), paths.Server("b"), paths.Server("c")} {
		if err := rc.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// a and b online (their statuses an instance's: ephemeral), a holding
	// the one item; c, gone, held nothing.
	for _, sv := range []string{"a", "b"} {
		if _, err := rc.Create(ctx, paths.Flag(sv, layout.Status), nil, regcenter.Ephemeral); err != nil {
			t.Fatal(err)
		}
	}
	for sv, items := range map[string]string{"a": "0", "b": "", "c": ""} {
		if _, err := rc.Create(ctx, paths.Flag(sv, layout.Sharding), []byte(items), regcenter.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	var fault func(context.Context, reshard.Servers) (string, error)
	o := &Office{
		Duties: NewDuties(), RC: rc, Paths: paths, Log: slog.New(slog.DiscardHandler),
		Leading:        func() bool { return true },
		Go:             func(f func()) bool { f(); return true },
		KickMembership: func() {}, KickReshard: func() {}, KickEpoch: func() {},
		Fault: func(ctx context.Context, servers reshard.Servers) (string, error) { return fault(ctx, servers) },
	}
	placed := func(ctx context.Context, servers reshard.Servers) (string, error) {
		return reshard.PlacementFault(ctx, rc, paths, servers, 1)
	}
	// elected: the election and the first membership check it asks for.
	elected := func() {
		t.Helper()
		o.Elected(ctx)
		if _, ok := o.CheckMembership(ctx); !ok {
			t.Fatal("the first membership check did not check")
		}
	}
	flagged := takeFlag(t, ctx, rc, paths)

	fault = placed
	elected()
	if flagged() {
		t.Error("the inherited assignment holds: a reshard flagged")
	}
	if _, ok := o.CheckMembership(ctx); !ok || flagged() {
		t.Errorf("the inherited assignment's servers are online: checked %v, flagged a reshard", ok)
	}
	o.Revoked()

	for _, c := range []struct {
		name  string
		fault func(context.Context, reshard.Servers) (string, error)
	}{
		{"the assignment does not hold", func(context.Context, reshard.Servers) (string, error) {
			return "an item held twice or by nobody", nil
		}},
		{"it cannot be read", func(context.Context, reshard.Servers) (string, error) {
			return "", errors.New("read")
		}},
	} {
		fault = c.fault
		elected()
		if !flagged() {
			t.Errorf("%s: no reshard flagged", c.name)
		}
		o.Revoked()
	}

	// b's status made a persistent node, no instance's: a reshard removes
	// it, so the new leader does not keep the assignment.
	if err := rc.Delete(ctx, paths.Flag("b", layout.Status), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Create(ctx, paths.Flag("b", layout.Status), nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	fault = placed
	elected()
	if !flagged() {
		t.Error("a status node no instance holds: no reshard flagged")
	}
	o.Revoked()
}

// takeFlag returns a func reporting whether a reshard of the job at paths
// is flagged, and taking the flag down when it is.
func takeFlag(t *testing.T, ctx context.Context, rc regcenter.Center, paths layout.Job) func() bool {
	return func() bool {
		t.Helper()
		ok := roomtest.Exists(t, ctx, rc, paths.Necessary())
		if ok {
			if err := rc.Delete(ctx, paths.Necessary(), -1); err != nil {
				t.Fatal(err)
			}
		}
		return ok
	}
}
