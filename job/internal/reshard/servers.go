package reshard

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/regcenter"
)

// Servers maps each server id of a job to the set of its child nodes
// (layout.Status, layout.Sharding, layout.Disabled, …), as ReadServers
// found them.
type Servers map[string]map[string]bool

// Names lists the servers, sorted.
func (s Servers) Names() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Online lists servers with a live status and no disabled flag, sorted.
func (s Servers) Online() []string {
	var out []string
	for _, sv := range s.Names() {
		if kids := s[sv]; kids[layout.Status] && !kids[layout.Disabled] {
			out = append(out, sv)
		}
	}
	return out
}

// ReadServers reads a job's servers and the children of each. A job with
// no servers node has none; a server whose node went while it was read is
// left out.
func ReadServers(ctx context.Context, rc regcenter.Center, paths layout.Job) (Servers, error) {
	names, err := rc.Children(ctx, paths.Servers())
	if errors.Is(err, regcenter.ErrNoNode) {
		return Servers{}, nil
	}
	if err != nil {
		return nil, err
	}
	// The reads go out together (pipelined on the one connection): with
	// a hundred servers, one at a time was most of a reshard.
	kids := make([][]string, len(names))
	errs := make([]error, len(names))
	parallel.Each(len(names), reads, func(i int) {
		kids[i], errs[i] = rc.Children(ctx, paths.Server(names[i]))
	})
	out := Servers{}
	for i, sv := range names {
		if errors.Is(errs[i], regcenter.ErrNoNode) {
			continue
		}
		if errs[i] != nil {
			return nil, errs[i]
		}
		set := map[string]bool{}
		for _, k := range kids[i] {
			set[k] = true
		}
		out[sv] = set
	}
	return out, nil
}

// FakeStatuses finds status nodes that no instance holds — persistent
// ones: an instance's status is always ephemeral — marks their servers
// offline in servers (their layout.Status mark deleted), warns of each on
// log, and returns their paths for the reshard to delete (Ops). Left
// alone, such a node makes a server look online forever and its items
// never run.
func FakeStatuses(ctx context.Context, rc regcenter.Center, paths layout.Job, servers Servers, log *slog.Logger) ([]string, error) {
	var fakes, withStatus []string
	for _, sv := range servers.Names() {
		if servers[sv][layout.Status] {
			withStatus = append(withStatus, sv)
		}
	}
	if len(withStatus) == 0 {
		return nil, nil
	}
	ps := make([]string, len(withStatus))
	for i, sv := range withStatus {
		ps[i] = paths.Flag(sv, layout.Status)
	}
	nodes, err := rc.GetMany(ctx, ps...)
	if err != nil {
		return nil, err
	}
	for i, sv := range withStatus {
		p := ps[i]
		if nodes[i].Exists && nodes[i].Stat.EphemeralOwner == 0 {
			log.Warn("persistent status node: not an instance's; the server is treated as offline and the node removed", "server", sv, "node", p)
			delete(servers[sv], layout.Status)
			fakes = append(fakes, p)
		}
	}
	return fakes, nil
}

// reads bounds the reads (and the misfire writes) a reshard has in flight
// at once.
const reads = 64
