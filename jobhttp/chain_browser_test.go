package jobhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
)

// waitTrue waits until the JavaScript expression expr is true in the page.
func (tb *tab) waitTrue(what, expr string) {
	tb.t.Helper()
	if err := chromedp.Run(tb.ctx, chromedp.Poll(expr, nil, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		tb.t.Fatalf("waiting for %s: %v; the page shows %q", what, err, tb.text("#view"))
	}
}

// list evaluates a JavaScript expression that yields a list of strings.
func (tb *tab) list(expr string) []string {
	tb.t.Helper()
	var out []string
	tb.run(evaluate(expr, &out))
	return out
}

// chainStates is a JavaScript expression: the chain graph's jobs as
// "name:state", in the order drawn.
const chainStates = `[...document.querySelectorAll("#chains-graph .chain-node")].map((g) => g.dataset.job + ":" + g.dataset.state)`

// TestConsoleDrawsAChain: a → b → c on a live cluster, with one fire. The
// Chains page draws the three jobs in three columns, left to right, with
// an arrow from a to b and one from b to c; while a's run is held, a reads
// running and b and c waiting for a parent; once it is let go, every job
// reads completed on every item, with the same last fire. A job's page
// shows its parents and dependents with their states, linked.
func TestConsoleDrawsAChain(t *testing.T) {
	// One fire a day, the first a few seconds from now, so that the chain
	// stands still after it: the states are read from what that fire left.
	start := time.Now().UTC().Truncate(time.Second).Add(5 * time.Second)
	daily := fmt.Sprintf("%d %d %d * * *", start.Second(), start.Minute(), start.Hour())
	mk := func(name string, items int, after string) job.Config {
		cfg := job.Config{Name: name, Cron: daily, TimeZone: "UTC", ShardingTotalCount: items, After: after}
		if after != "" {
			cfg.AfterTimeout = time.Minute
		}
		return cfg
	}
	gate := make(chan struct{})
	var release sync.Once
	setup := consoleSetup{exec: func(ctx context.Context, sc job.ShardingContext) error {
		if sc.JobName != "a" {
			return nil
		}
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	cc := newConsoleCluster(t, jobhttp.Options{Token: consoleToken}, setup, mk("c", 1, "b"), mk("a", 2, ""), mk("b", 1, "a"))
	t.Cleanup(func() { release.Do(func() { close(gate) }) }) // before the instances shut down

	tb := newTab(t)
	tb.open(cc.console + "#/chains")
	tb.waitTrue("the three jobs drawn", `document.querySelectorAll("#chains-graph .chain-node").length === 3`)
	if got := tb.list(`[...document.querySelectorAll("#chains-graph .chain-node")].map((g) => g.dataset.job + ":" + g.dataset.layer)`); !slices.Equal(got, []string{"a:0", "b:1", "c:2"}) {
		t.Fatalf("nodes and layers %v", got)
	}
	if got := tb.list(`[...document.querySelectorAll("#chains-graph .chain-edge")].map((e) => e.dataset.from + ">" + e.dataset.to)`); !slices.Equal(got, []string{"a>b", "b>c"}) {
		t.Fatalf("edges %v", got)
	}
	// Drawn left to right, each arrow from its parent's box to its
	// dependent's.
	var geo struct {
		Boxes map[string][2]float64 `json:"boxes"` // left, right
		Edges [][2]float64          `json:"edges"` // start x, end x
	}
	tb.run(evaluate(`(() => {
		const boxes = {};
		for (const g of document.querySelectorAll("#chains-graph .chain-node")) {
			const r = g.getBoundingClientRect();
			boxes[g.dataset.job] = [r.left, r.right];
		}
		const edges = [...document.querySelectorAll("#chains-graph .chain-edge")].map((e) => {
			const n = e.getTotalLength(), m = e.getScreenCTM();
			const a = e.getPointAtLength(0).matrixTransform(m), b = e.getPointAtLength(n).matrixTransform(m);
			return [a.x, b.x];
		});
		return {boxes, edges};
	})()`, &geo))
	a, b, c := geo.Boxes["a"], geo.Boxes["b"], geo.Boxes["c"]
	if !(a[1] < b[0] && b[1] < c[0]) {
		t.Fatalf("the boxes are not left to right: %+v", geo.Boxes)
	}
	for i, want := range [][2][2]float64{{a, b}, {b, c}} {
		e := geo.Edges[i]
		if d0, d1 := e[0]-want[0][1], want[1][0]-e[1]; d0 < -1 || d0 > 1 || d1 < -1 || d1 > 12 {
			t.Errorf("edge %d runs from x=%.0f to x=%.0f; the boxes end at %.0f and start at %.0f", i, e[0], e[1], want[0][1], want[1][0])
		}
	}
	// Before the fire: nothing ran. On a busy machine the fire may come
	// before the page is read: then the states are those of the fire
	// (checked below), and this one is not asserted.
	readBefore := time.Now()
	got := tb.list(chainStates)
	switch {
	case time.Now().Before(start):
		if !slices.Equal(got, []string{"a:none", "b:none", "c:none"}) {
			t.Errorf("before the fire: %v", got)
		}
	case readBefore.Before(start) && slices.Equal(got, []string{"a:none", "b:none", "c:none"}):
	case slices.Equal(got, []string{"a:running", "b:waiting", "c:waiting"}) || slices.Equal(got, []string{"a:none", "b:none", "c:none"}):
		t.Logf("the fire came before the page was read (%v after it): the states before it were not seen", readBefore.Sub(start))
	default:
		t.Errorf("at the fire: %v", got)
	}

	// The fire: a's items are held; b and c wait for their parents.
	tb.waitTrue("a running, b and c waiting", fmt.Sprintf(`JSON.stringify(%s) === %s`, chainStates, js(`["a:running","b:waiting","c:waiting"]`)))
	tb.waitText(`#chains-graph .chain-node[data-job="b"] .chain-state`, "waiting for a parent")
	tb.waitText("#chains-table tbody tr:nth-child(2)", "b", "waiting for a parent", "waits for a to complete it on every item")

	release.Do(func() { close(gate) })
	tb.waitTrue("every job completed", fmt.Sprintf(`JSON.stringify(%s) === %s`, chainStates, js(`["a:completed","b:completed","c:completed"]`)))
	fires := tb.list(`[...document.querySelectorAll("#chains-graph .chain-fire")].map((t) => t.textContent)`)
	if len(fires) != 3 || !strings.HasPrefix(fires[0], "last fire ") || fires[1] != fires[0] || fires[2] != fires[0] {
		t.Errorf("last fires %q", fires)
	}
	for _, n := range []string{"a", "b", "c"} {
		tb.waitText(fmt.Sprintf(`#chains-graph .chain-node[data-job=%q] .chain-state`, n), "completed on every item")
	}
	if n := cc.ran("b", job.KindFire) + cc.ran("c", job.KindFire); n != 2 {
		t.Errorf("b and c ran %d times", n)
	}

	// The same from the JSON: one fire, completed by all three.
	var g chainGraph
	if err := json.Unmarshal([]byte(cc.api().want(http.StatusOK, "GET", "/chains", "", "")), &g); err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		if n.State != "completed" || n.LastFire == nil || !n.LastFire.Equal(start) || n.Done != n.Items {
			t.Errorf("node %s: state %s, last fire %v (the fire was %v), done %d of %d", n.Name, n.State, n.LastFire, start, n.Done, n.Items)
		}
	}

	// b's page: its parent and its dependent, with their states, linked.
	tb.click(`#chains-graph .chain-node[data-job="b"] a`)
	tb.waitText("#job-name", "b")
	tb.waitText("#job-chain-state", "b", "completed on every item", "last fire")
	tb.waitText("#job-chain-parents", "a", "completed on every item", "last fire")
	tb.waitText("#job-chain-dependents", "c", "completed on every item", "last fire")
	tb.waitTrue("b drawn as the current job", `!!document.querySelector('#job-chain .chain-node.current[data-job="b"]')`)
	tb.click(`#job-chain-dependents a[href="#/job/c"]`)
	tb.waitText("#job-name", "c")
	tb.waitText("#job-chain-parents", "b", "completed on every item")
	tb.waitText("#job-chain-dependents", "none")
}
