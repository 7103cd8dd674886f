package reconcile

import (
	"fmt"
	"slices"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Seen is what a job's last clean check on its leader read: every node
// the checks read (the Assignment's and the books' repair), each as it
// stood before that check began. A round that finds every one of them as
// it was knows the checks would find what they found, nothing to do, and
// skips them: one read of the nodes' stats instead of a read of each
// server's children, its assignment, the unplaced items, the exclusions,
// the reshard's flags and the load table — the leader's round costs a
// request per change, not a dozen per job each minute.
//
// Why a stat is proof: a node's creation (Czxid), last data change
// (Mzxid, Version) and children's changes (CVersion, counting every child
// made or deleted) all move with any change a check could see, and none
// moves back (regcenter's contract, on every registry). The stats are read
// before the checks, so a change made during them moves a stat away from
// what is kept, and the next round checks again.
//
// The Loop keeps one per job, on its goroutine; a Round only uses the one
// it is given. The zero Seen knows nothing.
type Seen struct {
	key     string   // the settings the checks ran with (seenKey)
	servers []string // the servers the stamps' paths were made for
	stamps  []stamp  // jobPaths(servers), then the namespace's, as read before a clean check; nil: none
}

// stamp is what a node's stat says of its identity and its changes.
type stamp struct {
	exists         bool
	czxid, mzxid   int64
	version, cvers int32
}

func stampOf(n regcenter.NodeData) stamp {
	if !n.Exists {
		return stamp{}
	}
	return stamp{exists: true, czxid: n.Stat.Czxid, mzxid: n.Stat.Mzxid, version: n.Stat.Version, cvers: n.Stat.CVersion}
}

// seenKey is the check's settings: a change of the job's strategy, item
// count or failover changes what the checks decide on the same nodes.
func seenKey(a Assignment) string {
	return fmt.Sprintf("%q/%d/%v", a.Strategy, a.Total, a.Failover)
}

// kept returns the servers whose nodes' stamps s keeps for a check with
// settings key, and whether it keeps any.
func (s *Seen) kept(key string) ([]string, bool) {
	if s == nil || s.key != key || s.stamps == nil {
		return nil, false
	}
	return s.servers, true
}

// unchanged reports whether nodes, read for jobPaths of the servers s
// keeps (kept) and then the namespace's, say that nothing the checks read
// changed since the clean check s kept.
func (s *Seen) unchanged(nodes []regcenter.NodeData) bool {
	if s == nil || s.stamps == nil || len(nodes) != len(s.stamps) {
		return false
	}
	for i, n := range nodes {
		if stampOf(n) != s.stamps[i] {
			return false
		}
	}
	return true
}

// note keeps the outcome of a round's checks, made with settings key:
// nodes is what the round read, before them, of jobPaths(read) and the
// namespace's nodes (nil: nothing read), checked the servers the checks
// found. A clean check of
// the servers the stamps were read for keeps the stamps, and the next
// round may skip; any other outcome keeps none, and the next round
// checks.
func (s *Seen) note(key string, read []string, nodes []regcenter.NodeData, checked []string, clean bool) {
	if s == nil {
		return
	}
	if !clean || nodes == nil || !slices.Equal(read, checked) {
		s.key, s.servers, s.stamps = "", nil, nil
		return
	}
	s.key, s.servers = key, read
	s.stamps = make([]stamp, len(nodes))
	for i, n := range nodes {
		s.stamps[i] = stampOf(n)
	}
}

// jobPaths are the job's nodes a leader's checks of job read, for its
// servers: the server list and each server's children (ReadServers), each
// server's assignment and the unplaced items (PlacementFault, FirstStale,
// ReadAssignment), and the reshard's epoch and flag (RepairRequest). The
// namespace's nodes they read are read once for every job (Pass): the
// exclusions (sharedPaths, ReadExcluded) and the load table's stat (the
// books' repair; its data is the placer's to read).
func jobPaths(job layout.Job, servers []string) []string {
	ps := []string{job.Servers(), job.Unplaced(), job.ShardingEpoch(), job.Necessary()}
	for _, sv := range servers {
		ps = append(ps, job.Server(sv), job.Flag(sv, layout.Sharding))
	}
	return ps
}

// sharedPaths are the namespace's nodes every leader's checks read, but
// for the load table: the parents of the drain list and of the instances
// marked offline, whose children are the exclusions.
var sharedPaths = []string{layout.DrainList, layout.Offline}
