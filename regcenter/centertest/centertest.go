// Package centertest is the conformance suite every implementation of
// [regcenter.Center] must pass: one suite, run by each backend against its
// own servers, so that ZooKeeper and etcd (and anything after them) are held
// to the same contract by the same cases.
//
// # Running it
//
// A backend's test starts its servers and calls [Run] with a [Factory] that
// makes centers on them:
//
//	func TestConformance(t *testing.T) {
//		centertest.Run(t, centertest.ZooKeeperFactory(zktest.Start(t)))
//	}
//
// Another backend fills in a Factory of its own:
//
//	centertest.Run(t, centertest.Factory{
//		New:           func(tb testing.TB, ns string) regcenter.Center { ... }, // closed by tb.Cleanup
//		ExpireSession: func(tb testing.TB, c regcenter.Center) { ... },      // or nil
//		Restart:       func(tb testing.TB) { ... },                          // or nil
//		MaxNodeBytes:  limit,                                                // 0: the default
//	})
//
// Every case is a subtest of its own, named after what it checks
// (go test -run 'TestConformance/ChildrenAreDirectOnly'), and works in a
// namespace of its own, so cases never see each other's nodes. A case that
// needs a capability the factory lacks ([Factory.ExpireSession],
// [Factory.Restart]) is skipped with a message naming the missing field.
//
// # What it checks
//
//   - Every method and sentinel error of the contract: ErrNoNode from Get,
//     Children, Set and Delete of a missing node (Exists says false);
//     ErrNodeExists; Create making missing parents; EnsurePath idempotent;
//     ErrBadVersion from Set and Delete at a stale version, and -1 meaning
//     any; ErrNotEmpty; DeleteTree of a subtree and of a missing node;
//     Children listing direct children only (never a prefix match: /a/1 is
//     not a parent of /a/10), with 10,000 of them in one call; Stat's
//     Version, CVersion, NumChildren, DataLength, EphemeralOwner, Czxid,
//     Mzxid, Ctime and Mtime (CVersion counting every child created or
//     deleted, several in one Multi included); GetMany answering each
//     path as Get would, in order, a missing node absent rather than an
//     error, in one read for a few paths; ErrTooLarge past the write limit with nothing written;
//     ErrClosed after Close; namespaces isolated from each other.
//   - Ephemeral nodes: gone as soon as Close returns, and gone when the
//     session is lost, as a second client sees; SessionLost then SessionNew,
//     the lost session's context cancelled with ErrSessionLost, a new
//     session id, watches resynchronised.
//   - Sequential nodes: a 10-digit suffix, unique and increasing across two
//     clients creating at the same time.
//   - Multi: ops applied in order (a node deleted and created again in one
//     transaction is a new node, its versions counted from 0); all or
//     nothing, with a *MultiError naming the op that failed and wrapping its
//     sentinel, whether its ops are siblings or each under a parent of its
//     own; check-and-set transactions from concurrent
//     writers on two clients never lose an update.
//   - Watches: node events in order; children events for direct children
//     only, not for a child's data or a grandchild; cancel stops calls;
//     WatchNow's state and every change after it; nothing lost across a
//     restart of every server.
//   - Stats: requests are counted by kind; expected answers (no node, ...)
//     are not errors.
//
// The suite's own tests run chosen cases against wrappers of a real center
// that break one rule each (children by key prefix, versions ignored, a
// Multi applied op by op, sequence numbers counted per client, ...) and
// check that each case fails for the reason it names.
//
// # Rules the cases keep
//
// Every wait has a deadline (20 s) and waits on a channel or polls state; no
// case sleeps to let something happen. Cases never assert on wall-clock
// time. Goroutines a case starts end before it returns. Centers are closed
// by the factory when the test ends. No transaction has more than 50 ops
// (etcd allows 128 by default).
package centertest

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

// Factory makes centers on one running cluster of a backend and injects the
// faults some cases need. New is required. ExpireSession and Restart are
// capabilities: a case that needs one skips, naming it, when it is nil.
type Factory struct {
	// New returns a connected center whose paths live under namespace (a
	// single path segment, as Config.Namespace). Two calls with the same
	// namespace give two independent clients (two sessions) on the same
	// tree: that is how the cases make a second client. The factory closes
	// the center when tb ends (tb.Cleanup); a case may close it first, so
	// a second Close must be harmless. New fails tb if it cannot connect.
	New func(tb testing.TB, namespace string) regcenter.Center

	// ExpireSession makes the servers end c's current session as if it had
	// timed out (ZooKeeper: the session expires; etcd: its lease is
	// revoked), and returns once they have: its ephemeral nodes are gone.
	// c must be a center this factory's New made. c then notices on its
	// own and establishes a new session. Nil: the session-loss cases skip.
	ExpireSession func(tb testing.TB, c regcenter.Center)

	// Restart stops every server of the cluster and starts them again with
	// their data, returning once they serve. Centers made before stay open
	// and must carry on. Nil: the restart cases skip.
	Restart func(tb testing.TB)

	// MaxNodeBytes is the write limit of the centers New makes (their
	// Config.MaxNodeBytes); 0 means [regcenter.DefaultMaxNodeBytes].
	MaxNodeBytes int
}

// maxNodeBytes returns the limit in force.
func (f Factory) maxNodeBytes() int {
	if f.MaxNodeBytes > 0 {
		return f.MaxNodeBytes
	}
	return regcenter.DefaultMaxNodeBytes
}

// suite is what a case gets: the factory and a namespace of its own.
type suite struct {
	f  Factory
	ns string
}

// center returns a new client on the case's namespace.
func (s *suite) center(tb testing.TB) regcenter.Center {
	tb.Helper()
	return s.f.New(tb, s.ns)
}

// needExpire skips tb unless the factory can expire sessions.
func (s *suite) needExpire(tb testing.TB) {
	tb.Helper()
	if s.f.ExpireSession == nil {
		tb.Skip("needs Factory.ExpireSession, which this backend's factory does not provide")
	}
}

// needRestart skips tb unless the factory can restart the servers.
func (s *suite) needRestart(tb testing.TB) {
	tb.Helper()
	if s.f.Restart == nil {
		tb.Skip("needs Factory.Restart, which this backend's factory does not provide")
	}
}

// testCase is one named conformance case.
type testCase struct {
	name string
	fn   func(tb testing.TB, s *suite)
}

// cases lists every case in the order Run runs them. The restart case is
// last: it disturbs every client of the cluster.
var cases = []testCase{
	{"NoNode", testNoNode},
	{"GetMany", testGetMany},
	{"NodeExists", testNodeExists},
	{"CreateMakesParents", testCreateMakesParents},
	{"EnsurePathIsIdempotent", testEnsurePath},
	{"SetAtVersion", testSetVersion},
	{"DeleteAtVersion", testDeleteVersion},
	{"DeleteNotEmpty", testDeleteNotEmpty},
	{"DeleteTree", testDeleteTree},
	{"ChildrenAreDirectOnly", testChildrenDirectOnly},
	{"TenThousandChildren", testManyChildren},
	{"NamespacesAreIsolated", testNamespaces},
	{"StatVersions", testStatVersions},
	{"CVersionCountsEveryChild", testCVersionCountsEveryChild},
	{"StatOwnerAndZxids", testStatOwnerAndZxids},
	{"StatTimes", testStatTimes},
	{"TooLarge", testTooLarge},
	{"Closed", testClosed},
	{"EphemeralGoneOnClose", testEphemeralGoneOnClose},
	{"SessionLoss", testSessionLoss},
	{"SequentialNodes", testSequential},
	{"MultiAppliesAll", testMultiApplies},
	{"MultiRecreatesANode", testMultiRecreate},
	{"MultiRecreatedNodeVersions", testMultiRecreateVersions},
	{"MultiIsAllOrNothing", testMultiAtomic},
	{"MultiConcurrentCheckAndSet", testMultiConcurrent},
	{"WatchStartsWithResync", testWatchResyncFirst},
	{"WatchNodeInOrder", testWatchNodeInOrder},
	{"WatchChildrenDirectOnly", testWatchChildren},
	{"WatchChildrenOfMissingNode", testWatchChildrenMissing},
	{"WatchCancel", testWatchCancel},
	{"WatchNow", testWatchNow},
	{"Stats", testStats},
	{"WatchAcrossRestart", testWatchAcrossRestart},
}

// runID tells this process's namespaces from those of earlier runs on the
// same cluster; seq tells the cases' namespaces apart.
var (
	runID = os.Getpid()
	seq   atomic.Int64
)

// namespace returns a fresh namespace for one case.
func namespace() string {
	return fmt.Sprintf("centertest%d-%d", runID, seq.Add(1))
}

// Run runs every conformance case, each as a subtest of t named after it,
// against centers made by f.
func Run(t *testing.T, f Factory) {
	t.Helper()
	if f.New == nil {
		t.Fatal("centertest: Factory.New is nil")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, &suite{f: f, ns: namespace()})
		})
	}
}
