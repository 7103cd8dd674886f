package placement

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// countingCenter counts the reads of each path of a center, and refuses
// every read after the budget (when one is set) as a registry that stopped
// answering would.
type countingCenter struct {
	regcenter.Center
	mu     sync.Mutex
	reads  map[string]int
	budget atomic.Int64 // reads left; below 0 is no limit
}

var errBudget = errors.New("read budget spent")

func (c *countingCenter) count(path string) error {
	if c.budget.Load() >= 0 && c.budget.Add(-1) < 0 {
		c.budget.Store(0)
		return errBudget
	}
	c.mu.Lock()
	c.reads[path]++
	c.mu.Unlock()
	return nil
}

func (c *countingCenter) Get(ctx context.Context, path string) ([]byte, regcenter.Stat, error) {
	if err := c.count(path); err != nil {
		return nil, regcenter.Stat{}, err
	}
	return c.Center.Get(ctx, path)
}

// GetMany counts a read of each of its paths.
func (c *countingCenter) GetMany(ctx context.Context, paths ...string) ([]regcenter.NodeData, error) {
	for _, p := range paths {
		if err := c.count(p); err != nil {
			return nil, err
		}
	}
	return c.Center.GetMany(ctx, paths...)
}

func (c *countingCenter) Children(ctx context.Context, path string) ([]string, error) {
	if err := c.count(path); err != nil {
		return nil, err
	}
	return c.Center.Children(ctx, path)
}

// TestRebuildResumesWhereItWasCutOff: a namespace with assignments and no
// load table. A rebuild cut off halfway (the registry stops answering)
// keeps what it read; the next commit reads only the rest (and the jobs
// whose reads were in flight), writes the
// table, and the table says what the assignment nodes say.
func TestRebuildResumesWhereItWasCutOff(t *testing.T) {
	zc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	zk := roomtest.Open(t, zc.Servers(), "rebuild")
	const jobs = 3*rebuildChunk/2 + 7
	want := newTable()
	var ops []regcenter.Op
	for i := range jobs {
		j := layout.Job(fmt.Sprintf("j%04d", i))
		ops = append(ops, regcenter.CreateOp{Path: j.Root()}, regcenter.CreateOp{Path: j.Servers()})
		u := jobUnits{servers: map[string]int{}}
		for s, sv := range []string{"a", "b", "c"} {
			ops = append(ops, regcenter.CreateOp{Path: j.Server(sv)})
			items := []int{}
			for it := range (i + s) % 4 {
				items = append(items, 10*s+it)
			}
			ops = append(ops, regcenter.CreateOp{Path: j.Flag(sv, layout.Sharding), Data: []byte(layout.FormatItems(items))})
			u.servers[sv] = len(items)
		}
		if i%5 == 0 {
			ops = append(ops, regcenter.CreateOp{Path: j.Unplaced(), Data: []byte("99")})
			u.unplaced = 1
		}
		want.set(string(j), u)
		if len(ops) > 400 {
			if err := zk.Multi(ctx, ops...); err != nil {
				t.Fatal(err)
			}
			ops = nil
		}
	}
	if err := zk.Multi(ctx, ops...); err != nil {
		t.Fatal(err)
	}

	rc := &countingCenter{Center: zk, reads: map[string]int{}}
	p := NewPlacer(ctx, rc, slog.New(slog.DiscardHandler))
	rc.budget.Store(int64(rebuildChunk * 5)) // a little over one chunk of jobs
	if _, _, err := p.readTable(ctx); !errors.Is(err, errBudget) {
		t.Fatalf("a rebuild cut off: %v, want the registry's error", err)
	}
	if p.scan == nil || p.scan.read == 0 || len(p.scan.todo) == 0 {
		t.Fatalf("nothing kept of the rebuild cut off: %+v", p.scan)
	}
	t.Logf("cut off after %d jobs read, %d to go", p.scan.read, len(p.scan.todo))
	rc.budget.Store(-1)
	got, version, err := p.readTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if version != 0 {
		t.Errorf("version %d after the rebuilt table's create, want 0", version)
	}
	if p.scan != nil {
		t.Error("the rebuild is still kept once written")
	}
	// Each job is read once, but for those whose reads were in flight
	// when the registry stopped answering.
	again := 0
	for j := range jobs {
		name := fmt.Sprintf("j%04d", j)
		switch n := rc.reads[layout.Job(name).Servers()]; {
		case n == 2:
			again++
		case n != 1:
			t.Errorf("job %s's servers read %d times, want once", name, n)
		}
	}
	if again > rebuildReads {
		t.Errorf("%d jobs read again after the cut, want at most the %d in flight", again, rebuildReads)
	}
	checkSame(t, got, want)
	data, _, err := zk.Get(ctx, layout.Placement)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := DecodeTable(data)
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, stored, want)

	// The table is there now: it is read, not rebuilt; and read once
	// more, found unchanged, it is not decoded again.
	p = NewPlacer(ctx, rc, slog.New(slog.DiscardHandler))
	clear(rc.reads)
	before := Decodes()
	for range 3 {
		if _, _, err := p.readTable(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := Decodes() - before; n != 1 {
		t.Errorf("3 reads of an unchanged table decoded it %d times, want once", n)
	}
	if n := rc.reads[layout.Job("j0000").Servers()]; n != 0 {
		t.Errorf("a valid table was rebuilt (%d reads of a job's servers)", n)
	}
}

func checkSame(t *testing.T, got, want Table) {
	t.Helper()
	if len(got.jobs) != len(want.jobs) {
		t.Errorf("%d entries, want %d", len(got.jobs), len(want.jobs))
	}
	for j, u := range want.jobs {
		if !got.jobs[j].equal(u) {
			t.Errorf("job %s: %+v, want %+v", j, got.jobs[j], u)
		}
	}
	if !maps.Equal(got.Units(), want.Units()) || got.Unplaced() != want.Unplaced() {
		t.Errorf("units %v unplaced %d, want %v and %d", got.Units(), got.Unplaced(), want.Units(), want.Unplaced())
	}
}

// TestTableTooLargeFailsItsJobAtOnce: a load table grown past what one
// transaction may carry fails the reshard at once with
// regcenter.ErrTooLarge, and leaves the table as it was.
func TestTableTooLargeFailsItsJobAtOnce(t *testing.T) {
	zc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: "toolarge", MaxNodeBytes: 8 << 10},
		regcenter.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	big := newTable()
	for i := range 500 {
		big.set(fmt.Sprintf("j%04d", i), jobUnits{servers: map[string]int{"a": 1}})
	}
	data := big.encode()
	if len(data) > 8<<10 {
		t.Fatalf("seed table of %d bytes does not fit the test's limit", len(data))
	}
	if _, err := rc.Create(ctx, layout.Placement, data, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	p := NewPlacer(ctx, rc, slog.New(slog.DiscardHandler))
	ops := func(map[string][]int, []int) []regcenter.Op {
		return []regcenter.Op{regcenter.CreateOp{Path: "/new", Data: make([]byte, 3<<10)}}
	}
	req := &Request{Job: "new", Repair: true, Current: map[string][]int{"a": {0}}, Ops: ops}
	if err := p.Place(ctx, req); !errors.Is(err, regcenter.ErrTooLarge) {
		t.Fatalf("placing past the limit: %v, want ErrTooLarge", err)
	}
	after, _, err := rc.Get(ctx, layout.Placement)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(data) {
		t.Error("the table changed although the transaction was refused")
	}
}

// afterGet runs hook once, after the first Get of path: another instance
// writing between a read and the write that follows it.
type afterGet struct {
	regcenter.Center
	path string
	hook func()
	once sync.Once
}

func (c *afterGet) Get(ctx context.Context, path string) ([]byte, regcenter.Stat, error) {
	data, st, err := c.Center.Get(ctx, path)
	if path == c.path {
		c.once.Do(c.hook)
	}
	return data, st, err
}

// TestSeedTableWritesANewNamespacesEmptyTableOnly: a namespace with no job
// and no table (the node an instance's start makes, empty) gets the empty
// table, which a placer then reads without rebuilding anything; a
// namespace with a job, a table already written, and a table written
// between SeedTable's read and its write are left as they are.
func TestSeedTableWritesANewNamespacesEmptyTableOnly(t *testing.T) {
	zc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	children := func(rc regcenter.Center) []string {
		t.Helper()
		names, err := rc.Children(ctx, "/")
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	table := func(rc regcenter.Center) ([]byte, int32) {
		t.Helper()
		data, st, err := rc.Get(ctx, layout.Placement)
		if err != nil {
			t.Fatal(err)
		}
		return data, st.Version
	}

	fresh := roomtest.Open(t, zc.Servers(), "seed-new")
	if err := fresh.EnsurePath(ctx, layout.Instances); err != nil {
		t.Fatal(err)
	}
	if err := SeedTable(ctx, fresh, children(fresh)); err != nil {
		t.Fatal(err)
	}
	data, _ := table(fresh)
	if _, err := DecodeTable(data); err != nil {
		t.Fatalf("the new namespace's table %q: %v", data, err)
	}
	rc := &countingCenter{Center: fresh, reads: map[string]int{}}
	rc.budget.Store(-1)
	if _, _, err := NewPlacer(ctx, rc, slog.New(slog.DiscardHandler)).readTable(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rc.reads["/"]; n != 0 {
		t.Errorf("the placer listed the namespace's jobs %d times: it rebuilt the seeded table", n)
	}

	withJob := roomtest.Open(t, zc.Servers(), "seed-job")
	if err := withJob.EnsurePath(ctx, layout.Instances); err != nil {
		t.Fatal(err)
	}
	j := layout.Job("j0")
	if err := withJob.Multi(ctx, regcenter.CreateOp{Path: j.Root()}, regcenter.CreateOp{Path: j.Servers()},
		regcenter.CreateOp{Path: j.Server("a")}, regcenter.CreateOp{Path: j.Flag("a", layout.Sharding), Data: []byte("0,1")}); err != nil {
		t.Fatal(err)
	}
	if err := SeedTable(ctx, withJob, children(withJob)); err != nil {
		t.Fatal(err)
	}
	if data, _ := table(withJob); len(data) != 0 {
		t.Errorf("a namespace with a job got the table %q: its assignment would go uncounted", data)
	}

	// Written meanwhile (a reshard's commit, by another instance): kept.
	racing := roomtest.Open(t, zc.Servers(), "seed-race")
	if err := racing.EnsurePath(ctx, layout.Instances); err != nil {
		t.Fatal(err)
	}
	theirs := []byte(`{"servers":["a"],"seq":1,"jobs":{"j0":[2]},"joined":[1]}`)
	names := children(racing)
	hooked := &afterGet{Center: racing, path: layout.Placement, hook: func() {
		if _, err := racing.Set(ctx, layout.Placement, theirs, -1); err != nil {
			t.Error(err)
		}
	}}
	if err := SeedTable(ctx, hooked, names); err != nil {
		t.Fatal(err)
	}
	if data, _ := table(racing); string(data) != string(theirs) {
		t.Errorf("the table written meanwhile became %q", data)
	}
	// A table there already: nothing is written.
	_, before := table(racing)
	if err := SeedTable(ctx, racing, children(racing)); err != nil {
		t.Fatal(err)
	}
	if _, after := table(racing); after != before {
		t.Errorf("a namespace with its table had it written again: version %d, then %d", before, after)
	}
}
