package reshard

import (
	"context"
	"errors"
	"slices"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/regcenter"
)

// The leader's reads of whether a job's assignment still holds: after a
// change of its servers (Stands), and at each reconcile round (Stale,
// PlacementFault). They decide nothing: the leader flags the reshard.

// Stands reports whether the job's assignment, made for the servers last
// (the last reshard by this leader), still holds for online: no server was
// added, every server that left holds no item of the job, and no item
// waits unplaced. With last nil (nothing known of the last reshard) it
// does not: a new leader asks instead whether the assignment it inherits
// holds (leader.Office.Inherit). A death or a drain then disturbs only the jobs
// whose items the server held: the others' instances are not sent to read
// their assignment again at their next fire (a flagged reshard moves the
// epoch that every fire's proof checks), which at hundreds of jobs delayed
// the survivors' own fires behind a reshard of every job.
func Stands(ctx context.Context, rc regcenter.Center, paths layout.Job, last, online []string) (bool, error) {
	if last == nil {
		return false, nil
	}
	var left []string
	for _, sv := range online {
		if !slices.Contains(last, sv) {
			return false, nil // joined, or back: it may take items
		}
	}
	for _, sv := range last {
		if !slices.Contains(online, sv) {
			left = append(left, sv)
		}
	}
	unplaced, _, err := rc.Exists(ctx, paths.Unplaced())
	if err != nil || unplaced {
		return false, err // room under the caps may have changed
	}
	for _, sv := range left {
		data, _, err := rc.Get(ctx, paths.Flag(sv, layout.Sharding))
		if errors.Is(err, regcenter.ErrNoNode) {
			continue
		}
		if err != nil {
			return false, err
		}
		if items, err := layout.ParseItems(string(data)); err != nil || len(items) > 0 {
			return false, nil // it held items (or garbage): they move
		}
	}
	return true, nil
}

// Stale is the first server, in the order of their names, whose stored
// assignment is not the one wanted (see FirstStale).
type Stale struct {
	// Server is the server's id; "" when every server's assignment is
	// the one wanted.
	Server string
	// Have is its items as stored, Want those wanted.
	Have, Want []int
	// Garbage is the error parsing its sharding node, nil when it parsed.
	Garbage error
}

// FirstStale reads, one server at a time in the order of their names, the
// assignment of each server of servers that has a sharding node (none
// for one without), and stops at the first whose items are not want's or
// whose node is garbage. It checks a job whose strategy is one of
// ElasticJob's, whose assignment (want) follows from the servers online
// alone.
func FirstStale(ctx context.Context, rc regcenter.Center, paths layout.Job, servers Servers, want map[string][]int) (Stale, error) {
	for _, sv := range servers.Names() {
		var have []int
		if servers[sv][layout.Sharding] {
			data, _, err := rc.Get(ctx, paths.Flag(sv, layout.Sharding))
			if err != nil && !errors.Is(err, regcenter.ErrNoNode) {
				return Stale{}, err
			}
			if have, err = layout.ParseItems(string(data)); err != nil {
				return Stale{Server: sv, Want: want[sv], Garbage: err}, nil
			}
		}
		if layout.FormatItems(have) != layout.FormatItems(want[sv]) {
			return Stale{Server: sv, Have: have, Want: want[sv]}, nil
		}
	}
	return Stale{}, nil
}

// PlacementFault says why a placed job's stored assignment (one
// sharding.Place computed: Balanced, Idlest) is not valid for the servers
// online now, "" when it is: an item on a server that may not hold it
// (offline, disabled, drained), an item beyond total, an item held twice
// or by nobody, or items unplaced that may fit now. A valid placement is
// left alone: it depends on the whole namespace, so it is not recomputed
// here.
func PlacementFault(ctx context.Context, rc regcenter.Center, paths layout.Job, servers Servers, total int) (string, error) {
	excluded, err := placement.ReadExcluded(ctx, rc)
	if err != nil {
		return "", err
	}
	may := map[string]bool{}
	for _, sv := range excluded.Eligible(servers.Online()) {
		may[sv] = true
	}
	unplaced, err := placement.ReadItems(ctx, rc, paths.Unplaced())
	if err != nil {
		return "", err
	}
	why := ""
	if len(unplaced) > 0 {
		why = "items unplaced"
	}
	held := make([]int, total)
	for _, it := range unplaced {
		if it >= 0 && it < len(held) {
			held[it]++
		}
	}
	for _, sv := range servers.Names() {
		if !servers[sv][layout.Sharding] {
			continue
		}
		items, err := placement.ReadItems(ctx, rc, paths.Flag(sv, layout.Sharding))
		if err != nil {
			return "", err
		}
		for _, it := range items {
			switch {
			case it >= len(held):
				why = "an item beyond the item count"
			case !may[sv]:
				why = "items on a server that may not hold them"
			default:
				held[it]++
			}
		}
	}
	for _, n := range held {
		if n != 1 && why == "" {
			why = "an item held twice or by nobody"
		}
	}
	return why, nil
}
