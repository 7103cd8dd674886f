package jobhttp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/job"
)

// GET /chains[?job=NAME] answers the dependency graph of the namespace's
// jobs (job.Config.After) for the console's Chains page and a job's page:
// the jobs that take part in a dependency, each with its layer (its depth
// from the jobs that run after none), the chain (connected part of the
// graph) it belongs to and where it stands, and the edges from each parent
// to its dependents. With job, only that job's chain.

// Where a job of a chain stands (chainNode.State).
const (
	// chainCompleted: the job's last fire completed on every item, and
	// succeeded.
	chainCompleted = "completed"
	// chainRunning: items of the job are running.
	chainRunning = "running"
	// chainWaiting: items of the job are marked running for a fire that a
	// parent has not completed on every item: the run waits for it.
	chainWaiting = "waiting"
	// chainFailed: the job's last fire failed on an item.
	chainFailed = "failed"
	// chainSkipped: the job's last fire did not run because a parent's fire
	// did not succeed (job.ErrParentFailed).
	chainSkipped = "skipped"
	// chainPartial: the job's last fire completed on some items only, and
	// none is running (the others are owed, or have not run it yet).
	chainPartial = "partial"
	// chainNone: the job has completed no fire yet.
	chainNone = "none"
	// chainGone: a job names it as a parent, and it is not in the namespace.
	chainGone = "gone"
	// chainUnknown: the job's state could not be read (its config does not
	// decode, or there were more jobs in chains than are read).
	chainUnknown = "unknown"
)

// maxChainDetails bounds the jobs whose detail one request reads; the rest
// are shown as unknown, with a problem that says so.
const maxChainDetails = 200

// chainGraph is the answer of GET /chains.
type chainGraph struct {
	// Nodes are sorted by chain, layer and name.
	Nodes []chainNode `json:"nodes"`
	// Edges go from a parent to its dependent, sorted.
	Edges []chainEdge `json:"edges"`
	// Problems are what makes the graph incomplete or odd: a cycle in the
	// stored configs, jobs not read. Empty when all is well.
	Problems []string `json:"problems"`
}

// chainEdge is one dependency: To runs after From.
type chainEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// chainNode is one job of the graph and where it stands.
type chainNode struct {
	Name string `json:"name"`
	// Chain numbers the graph's connected parts, from 0, in the order of
	// their first job's name.
	Chain int `json:"chain"`
	// Layer is 0 for a job that runs after no job of the graph, else one
	// more than its deepest parent's.
	Layer int `json:"layer"`
	// State is one of completed, running, waiting, failed, skipped,
	// partial, none, gone and unknown; Detail says more in one line.
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
	// Status is the job's own status (ok, crashed, disabled, resharding).
	Status string `json:"status,omitempty"`
	// LastFire is the latest fire an item completed; Done counts the items
	// that completed it without an error, of Items.
	LastFire *time.Time `json:"lastFire,omitempty"`
	Items    int        `json:"items"`
	Done     int        `json:"done"`
	// Parents and Dependents name its neighbours in the graph.
	Parents    []string `json:"parents"`
	Dependents []string `json:"dependents"`
}

// chains serves GET /chains.
func (h *handler) chains(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	g, err := readChains(ctx, h.adm, r.URL.Query().Get("job"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, g)
}

// readChains builds the graph of the namespace's dependencies, or of the
// chain of one job when only is not "".
func readChains(ctx context.Context, adm *admin.Admin, only string) (chainGraph, error) {
	sums, err := adm.Jobs(ctx)
	if err != nil {
		return chainGraph{}, err
	}
	byName := make(map[string]admin.JobSummary, len(sums))
	parents := map[string][]string{}
	dependents := map[string][]string{}
	in := map[string]bool{}
	for _, s := range sums {
		byName[s.Name] = s
		for _, p := range s.After {
			parents[s.Name] = append(parents[s.Name], p)
			dependents[p] = append(dependents[p], s.Name)
			in[s.Name], in[p] = true, true
		}
	}
	if only != "" {
		if _, ok := byName[only]; !ok && !in[only] {
			return chainGraph{}, fmt.Errorf("%w: no job %q in namespace %q", admin.ErrUnknownJob, only, adm.Namespace())
		}
		part := map[string]bool{}
		if in[only] {
			queue := []string{only}
			part[only] = true
			for len(queue) > 0 {
				n := queue[0]
				queue = queue[1:]
				for _, m := range append(slices.Clone(parents[n]), dependents[n]...) {
					if !part[m] {
						part[m] = true
						queue = append(queue, m)
					}
				}
			}
		}
		in = part
	}
	names := make([]string, 0, len(in))
	for n := range in {
		names = append(names, n)
	}
	slices.Sort(names)

	g := chainGraph{Nodes: []chainNode{}, Edges: []chainEdge{}, Problems: []string{}}
	// Read the detail of the jobs in the graph that exist.
	var read []string
	for _, n := range names {
		if _, ok := byName[n]; ok {
			read = append(read, n)
		}
	}
	if len(read) > maxChainDetails {
		g.Problems = append(g.Problems, fmt.Sprintf("%d jobs take part in dependencies; the state of the first %d by name is read, the rest are shown as unknown", len(read), maxChainDetails))
		read = read[:maxChainDetails]
	}
	statuses := make([]admin.JobStatus, len(read))
	errs := make([]error, len(read))
	parallel.Each(len(read), 8, func(i int) {
		statuses[i], errs[i] = adm.Status(ctx, read[i])
	})
	detail := make(map[string]*admin.JobStatus, len(read))
	for i, n := range read {
		switch {
		case errs[i] == nil:
			detail[n] = &statuses[i]
		case errors.Is(errs[i], admin.ErrUnknownJob):
			delete(byName, n) // removed while we looked
		default:
			return chainGraph{}, fmt.Errorf("job %q: %w", n, errs[i])
		}
	}

	layers, cycle := chainLayers(names, parents)
	if len(cycle) > 0 {
		g.Problems = append(g.Problems, "a cycle among "+strings.Join(cycle, ", ")+
			": the instances refuse such configs at Start; these were stored separately (their layers are drawn after the rest)")
	}
	chainOf := chainParts(names, parents, dependents)
	through := map[string]*time.Time{}
	for n, st := range detail {
		through[n] = completedThrough(st)
	}
	for _, n := range names {
		node := chainNode{Name: n, Chain: chainOf[n], Layer: layers[n], Parents: inGraph(parents[n], in), Dependents: inGraph(dependents[n], in)}
		sum, exists := byName[n]
		switch st := detail[n]; {
		case !exists:
			node.State, node.Detail = chainGone, "named as a parent, but not in the namespace"
		case st == nil:
			node.State, node.Detail, node.Status, node.LastFire = chainUnknown, "not read: too many jobs in dependencies", sum.Status, sum.LastFire
		default:
			standing(&node, st, parents[n], byName, through)
		}
		g.Nodes = append(g.Nodes, node)
		for _, d := range node.Dependents {
			g.Edges = append(g.Edges, chainEdge{From: n, To: d})
		}
	}
	slices.SortFunc(g.Nodes, func(a, b chainNode) int {
		return cmp.Or(cmp.Compare(a.Chain, b.Chain), cmp.Compare(a.Layer, b.Layer), strings.Compare(a.Name, b.Name))
	})
	slices.SortFunc(g.Edges, func(a, b chainEdge) int { return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To)) })
	return g, nil
}

// inGraph returns the names of list that are in the graph, sorted, never nil.
func inGraph(list []string, in map[string]bool) []string {
	out := []string{}
	for _, n := range list {
		if in[n] && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// chainLayers gives each of names its depth: 0 without parents among
// names, else one more than its deepest parent. Jobs on a cycle (or after
// one) get layers after every other, and are returned as cycle.
func chainLayers(names []string, parents map[string][]string) (map[string]int, []string) {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	layers := map[string]int{}
	for done := false; !done; {
		done = true
		for _, n := range names {
			if _, ok := layers[n]; ok {
				continue
			}
			layer, ready := 0, true
			for _, p := range parents[n] {
				if !set[p] {
					continue
				}
				pl, ok := layers[p]
				if !ok {
					ready = false
					break
				}
				layer = max(layer, pl+1)
			}
			if ready {
				layers[n], done = layer, false
			}
		}
	}
	deepest := -1
	for _, l := range layers {
		deepest = max(deepest, l)
	}
	var cycle []string
	for _, n := range names {
		if _, ok := layers[n]; !ok {
			cycle = append(cycle, n)
			layers[n] = deepest + 1
		}
	}
	return layers, cycle
}

// chainParts numbers the connected parts of the graph, in the order of
// their first name.
func chainParts(names []string, parents, dependents map[string][]string) map[string]int {
	part := map[string]int{}
	next := 0
	for _, n := range names {
		if _, ok := part[n]; ok {
			continue
		}
		part[n] = next
		queue := []string{n}
		for len(queue) > 0 {
			m := queue[0]
			queue = queue[1:]
			for _, k := range append(slices.Clone(parents[m]), dependents[m]...) {
				if _, ok := part[k]; !ok && slices.Contains(names, k) {
					part[k] = next
					queue = append(queue, k)
				}
			}
		}
		next++
	}
	return part
}

// chainItems are the items of st that count: those of its config that are
// not disabled.
func chainItems(st *admin.JobStatus) []admin.ItemStatus {
	var out []admin.ItemStatus
	for _, it := range st.Items {
		if it.Item < st.ShardingTotalCount && !it.Disabled {
			out = append(out, it)
		}
	}
	return out
}

// completedThrough is the latest fire every item of st has completed (the
// earliest of their last fires); nil when an item has completed none.
func completedThrough(st *admin.JobStatus) *time.Time {
	items := chainItems(st)
	if len(items) == 0 {
		return nil
	}
	var t *time.Time
	for _, it := range items {
		if it.Last == nil {
			return nil
		}
		if t == nil || it.Last.Fire.Before(*t) {
			f := it.Last.Fire
			t = &f
		}
	}
	return t
}

// standing fills node's state from the job's detail st and its parents'
// completed fires.
func standing(node *chainNode, st *admin.JobStatus, parents []string, byName map[string]admin.JobSummary, through map[string]*time.Time) {
	node.Status, node.LastFire, node.Items = st.Status, st.LastFire, st.ShardingTotalCount
	if st.ConfigError != "" {
		node.State, node.Detail = chainUnknown, "config: "+st.ConfigError
		return
	}
	items := chainItems(st)
	if len(items) == 0 {
		node.State, node.Detail = chainNone, "every item is disabled"
		return
	}
	var (
		running []int
		runFire time.Time
		waits   bool
	)
	for _, it := range items {
		if it.Running == nil {
			continue
		}
		running = append(running, it.Item)
		// A trigger runs at once, without waiting for the parents.
		if it.Running.Kind != string(job.KindTrigger) {
			waits = true
			if runFire.IsZero() || it.Running.Fire.Before(runFire) {
				runFire = it.Running.Fire
			}
		}
	}
	if len(running) > 0 {
		if waits {
			var behind []string
			for _, p := range parents {
				if _, ok := byName[p]; !ok {
					behind = append(behind, p+" (not in the namespace)")
				} else if t := through[p]; t == nil || t.Before(runFire) {
					behind = append(behind, p)
				}
			}
			if len(behind) > 0 {
				node.State = chainWaiting
				node.Detail = fmt.Sprintf("fire %s waits for %s to complete it on every item", runFire.Format(time.RFC3339), strings.Join(behind, ", "))
				return
			}
		}
		node.State = chainRunning
		node.Detail = fmt.Sprintf("%d of %d items running", len(running), len(items))
		return
	}
	var last time.Time
	for _, it := range items {
		if it.Last != nil && it.Last.Fire.After(last) {
			last = it.Last.Fire
		}
	}
	if last.IsZero() {
		node.State, node.Detail = chainNone, "no fire completed yet"
		return
	}
	var failed, skipped []string
	for _, it := range items {
		l := it.Last
		switch {
		case l == nil || !l.Fire.Equal(last):
		case l.Error == "":
			node.Done++
		case strings.HasPrefix(l.Error, job.ErrParentFailed.Error()):
			skipped = append(skipped, fmt.Sprintf("item %d: %s", it.Item, l.Error))
		default:
			failed = append(failed, fmt.Sprintf("item %d: %s", it.Item, l.Error))
		}
	}
	switch {
	case len(failed) > 0:
		node.State, node.Detail = chainFailed, failed[0]
	case len(skipped) > 0:
		node.State, node.Detail = chainSkipped, skipped[0]
	case node.Done < len(items):
		node.State = chainPartial
		node.Detail = fmt.Sprintf("fire %s completed on %d of %d items", last.Format(time.RFC3339), node.Done, len(items))
	default:
		node.State = chainCompleted
	}
}
