package jobhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// chainGraph is GET /chains as a client reads it.
type chainGraph struct {
	Nodes []struct {
		Name       string     `json:"name"`
		Chain      int        `json:"chain"`
		Layer      int        `json:"layer"`
		State      string     `json:"state"`
		Detail     string     `json:"detail"`
		Status     string     `json:"status"`
		LastFire   *time.Time `json:"lastFire"`
		Items      int        `json:"items"`
		Done       int        `json:"done"`
		Parents    []string   `json:"parents"`
		Dependents []string   `json:"dependents"`
	} `json:"nodes"`
	Edges []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"edges"`
	Problems []string `json:"problems"`
}

// names lists the graph's nodes in its order.
func (g chainGraph) names() []string {
	var out []string
	for _, n := range g.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// edges lists the graph's edges as "from>to", in its order.
func (g chainGraph) edges() []string {
	var out []string
	for _, e := range g.Edges {
		out = append(out, e.From+">"+e.To)
	}
	return out
}

// TestChainsJSON: GET /chains draws the dependencies from the stored
// configs and says where each job stands from its execution nodes, as the
// instances write them: completed, failed, skipped for a failed parent,
// waiting for a parent, running, partial, none; a parent not in the
// namespace is gone, a job whose config or records are garbage is shown
// plainly, a cycle stored behind the instances' back is named, and ?job=
// narrows to one chain.
func TestChainsJSON(t *testing.T) {
	ns := fmt.Sprintf("chains%d-%d", os.Getpid(), httpNS.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: ns, SessionTimeout: 4 * time.Second}, regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	create := func(p, data string) {
		t.Helper()
		if _, err := rc.Create(ctx, p, []byte(data), regcenter.Persistent); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	const f1, f2, f3 = int64(1_700_000_000_000), int64(1_700_000_060_000), int64(1_700_000_120_000)
	jobNode := func(name string, items int, after ...string) {
		t.Helper()
		doc := fmt.Sprintf("name: %s\ncron: \"0 * * * * *\"\nshardingTotalCount: %d\n", name, items)
		if len(after) > 0 {
			doc += "after: [" + strings.Join(after, ", ") + "]\n"
		}
		create(layout.Job(name).Config(), doc)
	}
	completed := func(name string, item int, fire int64, errText string) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"server": "s1", "fire": fire, "kind": "fire", "begin": fire, "end": fire + 5, "error": errText})
		create(layout.Job(name).ItemNode(item, layout.Completed), string(b))
	}
	running := func(name string, item int, fire int64, kind job.Kind) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"server": "s1", "fire": fire, "kind": kind, "begin": fire, "session": "0x1"})
		create(layout.Job(name).ItemNode(item, layout.Running), string(b))
	}

	// a → b (failed) → c (skipped for b).
	jobNode("a", 2)
	completed("a", 0, f2, "")
	completed("a", 1, f2, "")
	jobNode("b", 1, "a")
	completed("b", 0, f2, "warehouse answered 503")
	jobNode("c", 1, "b")
	completed("c", 0, f2, job.ErrParentFailed.Error()+": b item 0, fire ...: warehouse answered 503")
	// d waits for a's next fire and for a job that is not there.
	jobNode("d", 1, "a", "ghost")
	running("d", 0, f3, job.KindFire)
	// e runs the fire a completed; f after e has run nothing yet.
	jobNode("e", 1, "a")
	running("e", 0, f2, job.KindFire)
	jobNode("f", 1, "e")
	// p completed the last fire on one item of two.
	jobNode("p", 2, "a")
	completed("p", 0, f2, "")
	completed("p", 1, f1, "")
	// q triggered while a is behind: a trigger does not wait.
	jobNode("q", 1, "a")
	running("q", 0, f3, job.KindTrigger)
	// g's record is garbage; h's config is garbage, and i runs after h.
	jobNode("g", 1, "a")
	create(layout.Job("g").ItemNode(0, layout.Completed), "{not json")
	create(layout.Job("h").Config(), "::: this is not a job config [")
	jobNode("i", 1, "h")
	// x and y run after each other: stored one by one, never started.
	jobNode("x", 1, "y")
	jobNode("y", 1, "x")
	// solo takes part in no dependency.
	jobNode("solo", 1)

	srv := httptest.NewServer(jobhttp.NewHandler(rc, jobhttp.Options{Logger: testLogger(t)}))
	t.Cleanup(srv.Close)
	get := func(q string, wantCode int) (chainGraph, string) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + "/chains" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var raw json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
			t.Fatalf("GET /chains%s: %v", q, err)
		}
		if resp.StatusCode != wantCode {
			t.Fatalf("GET /chains%s: status %d, want %d: %s", q, resp.StatusCode, wantCode, raw)
		}
		var g chainGraph
		if wantCode == http.StatusOK {
			if err := json.Unmarshal(raw, &g); err != nil {
				t.Fatal(err)
			}
		}
		return g, string(raw)
	}

	g, raw := get("", http.StatusOK)
	type want struct {
		chain, layer int
		state        string
		detail       string
		done, items  int
	}
	wants := map[string]want{
		"a":     {0, 0, "completed", "", 2, 2},
		"ghost": {0, 0, "gone", "not in the namespace", 0, 0},
		"b":     {0, 1, "failed", "item 0: warehouse answered 503", 0, 1},
		"c":     {0, 2, "skipped", "item 0: " + job.ErrParentFailed.Error(), 0, 1},
		"d":     {0, 1, "waiting", "waits for a, ghost (not in the namespace) to complete it", 0, 1},
		"e":     {0, 1, "running", "1 of 1 items running", 0, 1},
		"f":     {0, 2, "none", "no fire completed yet", 0, 1},
		"g":     {0, 1, "none", "no fire completed yet", 0, 1},
		"p":     {0, 1, "partial", "completed on 1 of 2 items", 1, 2},
		"q":     {0, 1, "running", "1 of 1 items running", 0, 1},
		"h":     {1, 0, "unknown", "config: ", 0, 0},
		"i":     {1, 1, "none", "", 0, 1},
		"x":     {2, 3, "none", "", 0, 1},
		"y":     {2, 3, "none", "", 0, 1},
	}
	// Ordered by chain, layer, name; x and y after every other layer.
	if got := g.names(); !slices.Equal(got, []string{"a", "ghost", "b", "d", "e", "g", "p", "q", "c", "f", "h", "i", "x", "y"}) {
		t.Fatalf("nodes %v\n%s", got, raw)
	}
	for _, n := range g.Nodes {
		w := wants[n.Name]
		if n.Chain != w.chain || n.Layer != w.layer || n.State != w.state || !strings.Contains(n.Detail, w.detail) || n.Done != w.done || n.Items != w.items {
			t.Errorf("node %s: chain %d layer %d state %q detail %q done %d/%d; want %+v", n.Name, n.Chain, n.Layer, n.State, n.Detail, n.Done, n.Items, w)
		}
	}
	wantEdges := []string{"a>b", "a>d", "a>e", "a>g", "a>p", "a>q", "b>c", "e>f", "ghost>d", "h>i", "x>y", "y>x"}
	if got := g.edges(); !slices.Equal(got, wantEdges) {
		t.Errorf("edges %v, want %v", got, wantEdges)
	}
	if a := g.Nodes[0]; a.LastFire == nil || !a.LastFire.Equal(time.UnixMilli(f2)) || !slices.Equal(a.Dependents, []string{"b", "d", "e", "g", "p", "q"}) || len(a.Parents) != 0 {
		t.Errorf("a: last fire %v, parents %v, dependents %v", a.LastFire, a.Parents, a.Dependents)
	}
	if len(g.Problems) != 1 || !strings.Contains(g.Problems[0], "a cycle among x, y") {
		t.Errorf("problems %q", g.Problems)
	}

	// One chain: c's is a's; solo's is empty; a job that is not there is 404.
	g, raw = get("?job=c", http.StatusOK)
	// Ordered by chain, layer, name; x and y after every other layer.
	if got := g.names(); !slices.Equal(got, []string{"a", "ghost", "b", "d", "e", "g", "p", "q", "c", "f"}) || len(g.Edges) != 9 || len(g.Problems) != 0 {
		t.Errorf("?job=c: nodes %v edges %v problems %q", got, g.edges(), g.Problems)
	}
	if g, _ = get("?job=ghost", http.StatusOK); len(g.Nodes) != 10 {
		t.Errorf("?job=ghost: %v", g.names())
	}
	if g, raw = get("?job=solo", http.StatusOK); len(g.Nodes) != 0 || len(g.Edges) != 0 || !strings.Contains(raw, `"nodes": []`) {
		t.Errorf("?job=solo: %s", raw)
	}
	if _, raw = get("?job=nope", http.StatusNotFound); !strings.Contains(raw, `no job \"nope\" in namespace`) {
		t.Errorf("?job=nope: %s", raw)
	}
}
