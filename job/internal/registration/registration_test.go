package registration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

func paths(ops []regcenter.Op) []string {
	var out []string
	for _, op := range ops {
		out = append(out, op.(regcenter.CreateOp).Path)
	}
	return out
}

func TestTreeOps(t *testing.T) {
	p := layout.Job("j")
	base := []string{p.Root(), p.Config(), p.Servers(), p.Server("s1"), p.Flag("s1", layout.Status), p.Leader(), p.ShardingEpoch(), p.Necessary()}
	queue := []string{p.FailoverItems()[:strings.LastIndex(p.FailoverItems(), "/")], p.FailoverItems()}
	latch := []string{p.ElectionLatch()[:strings.LastIndex(p.ElectionLatch(), "/")], p.ElectionLatch()}
	items := func(n int) []string {
		out := []string{p.Execution()}
		for it := range n {
			out = append(out, p.Item(it))
		}
		return out
	}
	for _, tc := range []struct {
		name               string
		failover, prepares bool
		items              int
		want               []string
	}{
		{"idle", false, false, 0, base},
		{"failover", true, false, 0, slices.Concat(base, queue)},
		{"prepares", false, true, 0, slices.Concat(base, latch)},
		{"both", true, true, 0, slices.Concat(base, queue, latch)},
		{"items", false, true, 3, slices.Concat(base, latch, items(3))},
		{"items beyond the bound", true, true, TreeItems + 1, slices.Concat(base, queue, latch, items(TreeItems))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops := TreeOps(Tree{Paths: p, Server: "s1", Host: "h", Config: []byte("cfg"), Failover: tc.failover, Prepares: tc.prepares, Items: tc.items})
			if got := paths(ops); !slices.Equal(got, tc.want) {
				t.Fatalf("paths %v, want %v", got, tc.want)
			}
			if c := ops[1].(regcenter.CreateOp); string(c.Data) != "cfg" {
				t.Errorf("config node holds %q", c.Data)
			}
			if c := ops[3].(regcenter.CreateOp); string(c.Data) != "h" {
				t.Errorf("server node holds %q", c.Data)
			}
			if c := ops[4].(regcenter.CreateOp); c.Mode != regcenter.Ephemeral || string(c.Data) != layout.StatusReady {
				t.Errorf("status op %+v", c)
			}
		})
	}
}

var errRefused = errors.New("refused")

// multiCenter answers Multi only: a transaction fails at the first op
// whose path is in fail (a MultiError for ErrNodeExists, the error itself otherwise), and otherwise records its size;
// GetMany reads which of them exist.
type multiCenter struct {
	regcenter.Center
	fail  map[string]error
	txns  []int
	reads int
}

func (c *multiCenter) Multi(_ context.Context, ops ...regcenter.Op) error {
	for i, op := range ops {
		if err, ok := c.fail[op.(regcenter.CreateOp).Path]; ok {
			if !errors.Is(err, regcenter.ErrNodeExists) {
				return err
			}
			return &regcenter.MultiError{Index: i, Op: op, Err: err}
		}
	}
	c.txns = append(c.txns, len(ops))
	return nil
}

// GetMany answers that the nodes in fail for ErrNodeExists exist, and
// counts its calls.
func (c *multiCenter) GetMany(_ context.Context, paths ...string) ([]regcenter.NodeData, error) {
	c.reads++
	out := make([]regcenter.NodeData, len(paths))
	for i, p := range paths {
		out[i].Exists = errors.Is(c.fail[p], regcenter.ErrNodeExists)
	}
	return out, nil
}

func TestCreateTrees(t *testing.T) {
	tree := func(i int) ([]regcenter.Op, error) {
		return TreeOps(Tree{Paths: layout.Job(fmt.Sprint("j", i)), Server: "s"}), nil
	}
	name := func(i int) string { return fmt.Sprint("j", i) }
	for _, tc := range []struct {
		name  string
		n     int
		fail  map[string]error
		want  []bool
		txns  int
		isErr bool
		reads int // bulk reads of which jobs exist
	}{
		{"one", 1, nil, []bool{true}, 1, false, 0},
		{"batched", TreesPerTxn + 1, nil, slices.Repeat([]bool{true}, TreesPerTxn+1), 2, false, 0},
		{"one exists", 3, map[string]error{layout.Job("j1").Root(): regcenter.ErrNodeExists}, []bool{true, false, true}, 1, false, 1},
		{"all exist", 2, map[string]error{layout.Job("j0").Root(): regcenter.ErrNodeExists, layout.Job("j1").Root(): regcenter.ErrNodeExists}, []bool{false, false}, 0, false, 0},
		// Another instance made most of a batch: one failed transaction
		// and one read leave them all out, not a transaction each.
		{"most exist", 8, existing(0, 1, 2, 4, 5, 6, 7), []bool{false, false, false, true, false, false, false, false}, 1, false, 1},
		{"one too large", 3, map[string]error{layout.Job("j1").Config(): regcenter.ErrTooLarge}, []bool{true, false, true}, 2, false, 0},
		{"refused", 2, map[string]error{layout.Job("j1").Root(): errRefused}, []bool{false, false}, 0, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &multiCenter{fail: tc.fail}
			made, err := CreateTrees(context.Background(), rc, tc.n, tree, name)
			if (err != nil) != tc.isErr {
				t.Fatalf("err %v", err)
			}
			if !slices.Equal(made, tc.want) {
				t.Errorf("made %v, want %v", made, tc.want)
			}
			if len(rc.txns) != tc.txns || rc.reads != tc.reads {
				t.Errorf("%d transactions and %d reads, want %d and %d", len(rc.txns), rc.reads, tc.txns, tc.reads)
			}
		})
	}
}

// existing says that the trees of jobs j<i> exist (see multiCenter).
func existing(is ...int) map[string]error {
	out := map[string]error{}
	for _, i := range is {
		out[layout.Job(fmt.Sprint("j", i)).Root()] = regcenter.ErrNodeExists
	}
	return out
}

func TestCreateTreesOpsError(t *testing.T) {
	bad := errors.New("bad config")
	made, err := CreateTrees(context.Background(), &multiCenter{}, 3, func(i int) ([]regcenter.Op, error) {
		if i == 1 {
			return nil, bad
		}
		return TreeOps(Tree{Paths: layout.Job(fmt.Sprint("j", i)), Server: "s"}), nil
	}, func(i int) string { return "" })
	if !errors.Is(err, bad) || slices.Contains(made, true) {
		t.Fatalf("made %v, err %v: want nothing made and the error", made, err)
	}
}

// every is a schedule firing every d from the zero time.
type every time.Duration

func (e every) Next(t time.Time) time.Time {
	d := time.Duration(e)
	return t.Truncate(d).Add(d)
}

func TestOwed(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	latest := t0.Add(3 * time.Minute)
	done := map[int]time.Time{
		0: latest,                   // completed the latest fire: owes nothing
		1: {},                       // never completed: owes the latest
		2: t0,                       // completed three fires back: owes from the next
		3: latest.Add(-time.Minute), // completed the fire before: owes the latest
	}
	completed := func(_ context.Context, it int) (time.Time, error) { return done[it], nil }
	debts, err := Owed(context.Background(), []int{0, 1, 2, 3, 7}, 4, every(time.Minute), latest, completed)
	if err != nil {
		t.Fatal(err)
	}
	want := []Debt{
		{Item: 1, Since: latest, Latest: latest},
		{Item: 2, Since: t0.Add(time.Minute), Latest: latest},
		{Item: 3, Since: latest, Latest: latest},
	}
	if !slices.Equal(debts, want) {
		t.Fatalf("debts %v, want %v", debts, want)
	}

	boom := errors.New("boom")
	debts, err = Owed(context.Background(), []int{1, 2}, 4, every(time.Minute), latest, func(ctx context.Context, it int) (time.Time, error) {
		if it == 2 {
			return time.Time{}, boom
		}
		return completed(ctx, it)
	})
	if !errors.Is(err, boom) || len(debts) != 1 || debts[0].Item != 1 {
		t.Fatalf("debts %v, err %v: want item 1's and the error", debts, err)
	}
}

func TestWatches(t *testing.T) {
	var w Watches
	cancelled := map[Slot]int{}
	cancel := func(s Slot) func() { return func() { cancelled[s]++ } }
	if w.Armed(WatchFlags) {
		t.Fatal("armed before Keep")
	}
	w.Keep(WatchFlags, cancel(WatchFlags))
	w.Keep(WatchConfig, cancel(WatchConfig))
	if !w.Armed(WatchFlags) || w.Armed(WatchItems) {
		t.Fatal("Armed does not follow Keep")
	}
	cs := w.Close()
	if len(cs) != 4 || cs[0] == nil || cs[1] != nil || cs[2] == nil || cs[3] != nil {
		t.Fatalf("Close returned %d cancels, nil at the wrong places", len(cs))
	}
	if len(cancelled) != 0 {
		t.Fatal("Close cancelled a watch itself")
	}
	w.Keep(WatchQueue, cancel(WatchQueue))
	if cancelled[WatchQueue] != 1 || w.Armed(WatchQueue) {
		t.Fatal("a watch kept after Close is not cancelled at once")
	}
}
