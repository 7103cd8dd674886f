package journal

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// memCenter is the part of a registry the journal uses, in memory: nodes
// with their data, versions and times of change, and a count of the
// writes. The other methods are not there (the embedded nil interface
// panics).
type memCenter struct {
	regcenter.Center
	mu     sync.Mutex
	nodes  map[string]memNode
	writes int   // creates and sets
	fail   error // when set, every write fails with it
	// lose, when set, has every set answered with a lost connection and
	// kept, unapplied, for land: a request that reached a member which
	// stopped answering, and is applied once it wakes.
	lose bool
	lost []lostSet
	// hang, when set, holds every create and set until its context ends,
	// as a registry that does not answer; entered hears of each.
	hang    bool
	entered chan struct{}
}

// held holds a write while m.hang is set, and returns its context's error
// then; nil at once otherwise. Called with m.mu held, it drops it while
// it holds.
func (m *memCenter) held(ctx context.Context) error {
	if !m.hang {
		return nil
	}
	m.mu.Unlock()
	defer m.mu.Lock()
	select {
	case m.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

// lostSet is a set whose answer was lost, to be applied later (land).
type lostSet struct {
	path    string
	data    []byte
	version int32
}

// land applies the sets that were lost, in order, as a registry would once
// the member holding them wakes; it returns their errors.
func (m *memCenter) land() []error {
	m.mu.Lock()
	lost := m.lost
	m.lost, m.lose = nil, false
	m.mu.Unlock()
	var errs []error
	for _, l := range lost {
		_, err := m.Set(context.Background(), l.path, l.data, l.version)
		errs = append(errs, err)
	}
	return errs
}

type memNode struct {
	data    []byte
	version int32
	mtime   time.Time
}

func newMemCenter() *memCenter { return &memCenter{nodes: map[string]memNode{}} }

func (m *memCenter) node(path string) (memNode, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[path]
	return n, ok
}

func (m *memCenter) put(path string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.nodes[path]
	m.nodes[path] = memNode{data: data, version: n.version + 1, mtime: time.Now()}
}

func (m *memCenter) Get(_ context.Context, path string) ([]byte, regcenter.Stat, error) {
	n, ok := m.node(path)
	if !ok {
		return nil, regcenter.Stat{}, regcenter.ErrNoNode
	}
	return n.data, regcenter.Stat{Version: n.version, Mtime: n.mtime}, nil
}

func (m *memCenter) Children(_ context.Context, path string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	found := false
	for p := range m.nodes {
		if p == path {
			found = true
		}
		if rest, ok := strings.CutPrefix(p, path+"/"); ok && !strings.Contains(rest, "/") {
			out = append(out, rest)
			found = true
		}
	}
	if !found {
		return nil, regcenter.ErrNoNode
	}
	return out, nil
}

func (m *memCenter) Create(ctx context.Context, path string, data []byte, _ regcenter.Mode) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.held(ctx); err != nil {
		return "", err
	}
	if m.fail != nil {
		return "", m.fail
	}
	if _, ok := m.nodes[path]; ok {
		return "", regcenter.ErrNodeExists
	}
	m.writes++
	m.nodes[path] = memNode{data: data, mtime: time.Now()}
	return path, nil
}

func (m *memCenter) Set(ctx context.Context, path string, data []byte, version int32) (regcenter.Stat, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.held(ctx); err != nil {
		return regcenter.Stat{}, err
	}
	if m.fail != nil {
		return regcenter.Stat{}, m.fail
	}
	if m.lose {
		m.lost = append(m.lost, lostSet{path: path, data: data, version: version})
		return regcenter.Stat{}, regcenter.ErrConnectionLoss
	}
	n, ok := m.nodes[path]
	if !ok {
		return regcenter.Stat{}, regcenter.ErrNoNode
	}
	if version >= 0 && version != n.version {
		return regcenter.Stat{}, regcenter.ErrBadVersion
	}
	m.writes++
	n = memNode{data: data, version: n.version + 1, mtime: time.Now()}
	m.nodes[path] = n
	return regcenter.Stat{Version: n.version, Mtime: n.mtime}, nil
}

func (m *memCenter) Delete(_ context.Context, path string, version int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[path]
	if !ok {
		return regcenter.ErrNoNode
	}
	if version >= 0 && version != n.version {
		return regcenter.ErrBadVersion
	}
	delete(m.nodes, path)
	return nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// at is the fire i seconds after a fixed second.
func at(i int) time.Time {
	return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(i) * time.Second)
}

// fires is the cover of the fires first through last, one a second.
func fires(first, last int) fireplan.Cover {
	return fireplan.CoverOf(fireplan.Span{First: at(first), Last: at(last)})
}

// everySecond is a schedule that fires at every second.
type everySecond struct{}

func (everySecond) Next(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }

// readNode decodes the journal node of process p.
func readNode(t *testing.T, rc *memCenter, p string) *stored.Journal {
	t.Helper()
	n, ok := rc.node(layout.Journal(p))
	if !ok {
		t.Fatalf("no journal node for %s", p)
	}
	doc, err := stored.DecodeJournal(n.data)
	if err != nil {
		t.Fatal(err)
	}
	return &doc
}

// A put returns once the node carries its entries, the node created at the
// first put and set after; every entry of the journal is in every write.
func TestPutWritesTheWholeJournal(t *testing.T) {
	rc := newMemCenter()
	j := New(rc, "p1", quiet())
	if j.ID() != "p1" {
		t.Fatalf("ID = %q", j.ID())
	}
	ctx := context.Background()
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{0: fires(0, 2)}); err != nil {
		t.Fatal(err)
	}
	if err := j.Put(ctx, time.Minute, "s1", "b", map[int]fireplan.Cover{3: fires(1, 1)}); err != nil {
		t.Fatal(err)
	}
	doc := readNode(t, rc, "p1")
	if doc.Server != "s1" {
		t.Errorf("server %q", doc.Server)
	}
	if got := doc.Entry("a", 0); len(got) != 1 || got[0] != [2]int64{at(0).UnixMilli(), at(2).UnixMilli()} {
		t.Errorf("a/0 = %v", got)
	}
	if got := doc.Entry("b", 3); len(got) != 1 || got[0] != [2]int64{at(1).UnixMilli(), at(1).UnixMilli()} {
		t.Errorf("b/3 = %v", got)
	}
	if rc.writes != 2 {
		t.Errorf("%d writes, want 2", rc.writes)
	}
}

// The puts that arrive while a write waits its window or is in flight
// share the next write.
func TestPutsShareWrites(t *testing.T) {
	rc := newMemCenter()
	j := New(rc, "p1", quiet())
	const n = 20
	start := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs <- j.Put(context.Background(), time.Minute, "s1", "a", map[int]fireplan.Cover{i: fires(i, i)})
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := readNode(t, rc, "p1").Items("a"); len(got) != n {
		t.Errorf("the node holds %d entries, want %d", len(got), n)
	}
	if rc.writes >= n {
		t.Errorf("%d puts made %d writes; want them shared", n, rc.writes)
	}
}

// The first write waits Window for others to share it; a write that
// carried one put alone has the next go at once (a lone job's completions
// wait for nothing), and one that carried several has the next wait again.
func TestWindowWaitedWhileWritesAreShared(t *testing.T) {
	rc := newMemCenter()
	j := New(rc, "p1", quiet())
	waits := func() bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.shared
	}
	if !waits() {
		t.Fatal("the first write does not wait Window")
	}
	for i := range 2 {
		if err := j.Put(context.Background(), time.Minute, "s1", "a", map[int]fireplan.Cover{i: fires(i, i)}); err != nil {
			t.Fatal(err)
		}
		if waits() {
			t.Fatalf("after a write that carried put %d alone the next waits Window", i)
		}
	}
	// Two puts that come while a write is in flight (held) share the
	// write after it.
	rc.mu.Lock()
	rc.hang, rc.entered = true, make(chan struct{}, 1)
	rc.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan error, 1)
	go func() { first <- j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{10: fires(10, 10)}) }()
	<-rc.entered // the first write is in flight, held
	later := make(chan error, 2)
	for it := 11; it <= 12; it++ {
		go func() {
			later <- j.Put(context.Background(), time.Minute, "s1", "a", map[int]fireplan.Cover{it: fires(it, it)})
		}()
	}
	for deadline := time.Now().Add(time.Minute); ; {
		j.mu.Lock()
		n := j.puts
		j.mu.Unlock()
		if n == 2 { // both came while the first write is held
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the two puts came while the write was held, after a minute", n)
		}
		time.Sleep(time.Millisecond)
	}
	rc.mu.Lock()
	rc.hang = false
	rc.mu.Unlock()
	cancel() // the held write fails; the puts after it lead their own
	<-first
	for range 2 {
		if err := <-later; err != nil {
			t.Fatal(err)
		}
	}
	if !waits() {
		t.Error("after a write that carried two puts the next does not wait Window")
	}
}

// A put that would make the node larger than MaxBytes is refused with
// ErrFull, and its entries dropped: the caller writes their records. What
// the journal held before stays.
func TestPutRefusesWhatDoesNotFit(t *testing.T) {
	rc := newMemCenter()
	j := New(rc, "p1", quiet())
	ctx := context.Background()
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{0: fires(0, 0)}); err != nil {
		t.Fatal(err)
	}
	big := map[int]fireplan.Cover{}
	for it := 1; it <= MaxBytes/16; it++ {
		big[it] = fires(0, 0)
	}
	err := j.Put(ctx, time.Minute, "s1", "a", big)
	if !errors.Is(err, ErrFull) {
		t.Fatalf("a put beyond MaxBytes: %v, want ErrFull", err)
	}
	if err := j.Put(ctx, time.Minute, "s1", "b", map[int]fireplan.Cover{0: fires(1, 1)}); err != nil {
		t.Fatal(err)
	}
	doc := readNode(t, rc, "p1")
	if len(doc.Items("a")) != 1 || len(doc.Items("b")) != 1 {
		t.Errorf("after a refused put the node holds %v", doc.Jobs)
	}
}

// A write that fails fails its puts; the entries stay, and the next write
// carries them. A put whose context ends returns its error.
func TestPutFailures(t *testing.T) {
	rc := newMemCenter()
	j := New(rc, "p1", quiet())
	ctx := context.Background()
	boom := errors.New("boom")
	rc.fail = boom
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{0: fires(0, 0)}); !errors.Is(err, boom) {
		t.Fatalf("put on a failing registry: %v", err)
	}
	rc.fail = nil
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{1: fires(1, 1)}); err != nil {
		t.Fatal(err)
	}
	if got := readNode(t, rc, "p1").Items("a"); len(got) != 2 {
		t.Errorf("the node holds %v, want items 0 and 1", got)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := j.Put(done, time.Minute, "s1", "a", map[int]fireplan.Cover{2: fires(2, 2)}); !errors.Is(err, context.Canceled) {
		t.Errorf("put with its context ended: %v", err)
	}
}

// A put that waits for another's write has no timer of its own, and its
// wait still ends: the write it waits for is bounded by its leader's
// timeout, and the write it then leads by its own. On a registry that
// does not answer both puts fail, and their entries stay for the next
// write.
func TestAWaitingPutEndsWithTheWritesItWaitsFor(t *testing.T) {
	rc := newMemCenter()
	rc.hang, rc.entered = true, make(chan struct{}, 1)
	j := New(rc, "p1", quiet())
	const timeout = 50 * time.Millisecond
	lead := make(chan error, 1)
	go func() {
		lead <- j.Put(context.Background(), timeout, "s1", "a", map[int]fireplan.Cover{0: fires(0, 0)})
	}()
	<-rc.entered // the first put's write is in flight
	waited := make(chan error, 1)
	go func() {
		waited <- j.Put(context.Background(), timeout, "s1", "a", map[int]fireplan.Cover{1: fires(1, 1)})
	}()
	for name, ch := range map[string]chan error{"the leading put": lead, "the waiting put": waited} {
		select {
		case err := <-ch:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s on a registry that does not answer: %v, want a deadline exceeded", name, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s still waits a minute on: its wait has no end", name)
		}
	}
	rc.mu.Lock()
	rc.hang = false
	rc.mu.Unlock()
	if err := j.Put(context.Background(), timeout, "s1", "a", map[int]fireplan.Cover{2: fires(2, 2)}); err != nil {
		t.Fatal(err)
	}
	if got := readNode(t, rc, "p1").Items("a"); len(got) != 3 {
		t.Errorf("after the failed puts the node holds %v, want items 0, 1 and 2", got)
	}
}

// putLost puts covers with every set's answer lost: the set is kept,
// unapplied, for rc.land.
func putLost(t *testing.T, rc *memCenter, j *Journal, covers map[int]fireplan.Cover) {
	t.Helper()
	rc.mu.Lock()
	rc.lose = true
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		rc.lose = false
		rc.mu.Unlock()
	}()
	if err := j.Put(context.Background(), time.Minute, "s1", "a", covers); !errors.Is(err, regcenter.ErrConnectionLoss) {
		t.Fatalf("put whose answer is lost: %v", err)
	}
}

// A write whose answer was lost and that lands after later writes does not
// put the older journal back: every write is a compare-and-set over the
// version the journal last wrote, and the one after a lost answer reads the
// version first.
func TestALateWriteDoesNotPutAnOlderJournalBack(t *testing.T) {
	rc := newMemCenter()
	j := New(rc, "p1", quiet())
	ctx := context.Background()
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{0: fires(0, 0)}); err != nil {
		t.Fatal(err)
	}
	// Fire 1's write reaches a member that stops answering: its answer is
	// lost, and the completion writes its record instead (not here).
	putLost(t, rc, j, map[int]fireplan.Cover{0: fires(0, 1)})
	// Fire 2's goes through another member.
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{0: fires(0, 2)}); err != nil {
		t.Fatal(err)
	}
	errs := rc.land()
	if len(errs) != 1 || !errors.Is(errs[0], regcenter.ErrBadVersion) {
		t.Fatalf("the late write landed: %v; want it refused for its version", errs)
	}
	ran := readNode(t, rc, "p1").Entry("a", 0)
	if len(ran) == 0 || ran[len(ran)-1][1] != at(2).UnixMilli() {
		t.Fatalf("the journal says item 0 ran %v; want through fire 2", ran)
	}
	// The journal goes on: the next put writes over the version it read.
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{0: fires(0, 3)}); err != nil {
		t.Fatal(err)
	}
	if ran := readNode(t, rc, "p1").Entry("a", 0); ran[len(ran)-1][1] != at(3).UnixMilli() {
		t.Fatalf("after the late write, the journal says item 0 ran %v; want through fire 3", ran)
	}
}

// A write that lands late before the next one is written over: that write
// reads the version its own late write moved, and carries more.
func TestAWriteOverALateWriteOfItsOwn(t *testing.T) {
	rc := newMemCenter()
	j := New(rc, "p1", quiet())
	ctx := context.Background()
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{0: fires(0, 0)}); err != nil {
		t.Fatal(err)
	}
	putLost(t, rc, j, map[int]fireplan.Cover{1: fires(1, 1)})
	if errs := rc.land(); len(errs) != 1 || errs[0] != nil {
		t.Fatalf("the lost write did not land: %v", errs)
	}
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{2: fires(2, 2)}); err != nil {
		t.Fatal(err)
	}
	if got := readNode(t, rc, "p1").Items("a"); len(got) != 3 {
		t.Errorf("the node holds %v, want items 0, 1 and 2", got)
	}
}

// A node deleted behind the journal's back is created again.
func TestPutCreatesTheNodeAgain(t *testing.T) {
	rc := newMemCenter()
	j := New(rc, "p1", quiet())
	ctx := context.Background()
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{0: fires(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := rc.Delete(ctx, layout.Journal("p1"), -1); err != nil {
		t.Fatal(err)
	}
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{1: fires(1, 1)}); err != nil {
		t.Fatal(err)
	}
	if got := readNode(t, rc, "p1").Items("a"); len(got) != 2 {
		t.Errorf("the node holds %v, want items 0 and 1", got)
	}
}

// Covered drops the entries a record lists through their last fire, and
// keeps those it does not; the node is removed at shutdown only once no
// entry is left.
func TestCoveredAndRemoveIfCovered(t *testing.T) {
	rc := newMemCenter()
	j := New(rc, "p1", quiet())
	ctx := context.Background()
	if err := j.RemoveIfCovered(ctx); err != nil {
		t.Fatalf("removing a journal never written: %v", err)
	}
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{0: fires(0, 2), 1: fires(0, 4)}); err != nil {
		t.Fatal(err)
	}
	j.Covered("a", map[int]time.Time{0: at(2), 1: at(3)})
	j.Covered("b", map[int]time.Time{1: at(9)})
	if err := j.RemoveIfCovered(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := rc.node(layout.Journal("p1")); !ok {
		t.Fatal("the node was removed with item 1's entry not covered")
	}
	if err := j.Put(ctx, time.Minute, "s1", "a", map[int]fireplan.Cover{2: fires(5, 5)}); err != nil {
		t.Fatal(err)
	}
	if got := readNode(t, rc, "p1").Items("a"); len(got) != 2 || got[0] != nil {
		t.Errorf("after item 0 was covered the node holds %v, want items 1 and 2", got)
	}
	j.Covered("a", map[int]time.Time{1: at(4), 2: at(5)})
	if err := j.RemoveIfCovered(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := rc.node(layout.Journal("p1")); ok {
		t.Error("the node stays with every entry covered")
	}
	if err := j.RemoveIfCovered(ctx); err != nil {
		t.Errorf("removing again: %v", err)
	}
}

// A sweep is due once per period.
func TestSweepDue(t *testing.T) {
	j := New(newMemCenter(), "p1", quiet())
	if !j.SweepDue(time.Hour) {
		t.Error("the first sweep is not due")
	}
	if j.SweepDue(time.Hour) {
		t.Error("a second sweep within the period is due")
	}
	if !j.SweepDue(0) {
		t.Error("a sweep with no period is not due")
	}
}

// Read finds another process's entry for an item, and nothing where the
// journal is missing or garbage.
func TestRead(t *testing.T) {
	rc := newMemCenter()
	ctx := context.Background()
	if ran, err := Read(ctx, rc, "p2", "a", 0); err != nil || ran != nil {
		t.Errorf("no journal: %v, %v", ran, err)
	}
	doc := stored.Journal{Server: "s2"}
	doc.Put("a", 0, [][2]int64{{at(0).UnixMilli(), at(3).UnixMilli()}})
	rc.put(layout.Journal("p2"), doc.Encode())
	if ran, err := Read(ctx, rc, "p2", "a", 0); err != nil || len(ran) != 1 || ran[0][1] != at(3).UnixMilli() {
		t.Errorf("entry: %v, %v", ran, err)
	}
	if ran, err := Read(ctx, rc, "p2", "a", 1); err != nil || ran != nil {
		t.Errorf("no entry: %v, %v", ran, err)
	}
	rc.put(layout.Journal("p2"), []byte("{garbage"))
	if ran, err := Read(ctx, rc, "p2", "a", 0); err != nil || ran != nil {
		t.Errorf("garbage: %v, %v", ran, err)
	}
}

// An orphan is a journal older than the age, read with its version; it is
// deleted unless written since, and one that does not decode reads empty.
func TestOrphans(t *testing.T) {
	rc := newMemCenter()
	ctx := context.Background()
	if ids, err := List(ctx, rc); err != nil || len(ids) != 0 {
		t.Errorf("no journals: %v, %v", ids, err)
	}
	doc := stored.Journal{Server: "s2"}
	doc.Put("a", 0, [][2]int64{{at(0).UnixMilli(), at(3).UnixMilli()}})
	rc.put(layout.Journal("p2"), doc.Encode())
	rc.put(layout.Journal("p3"), []byte("{garbage"))
	if ids, err := List(ctx, rc); err != nil || len(ids) != 2 {
		t.Errorf("two journals: %v, %v", ids, err)
	}
	if _, ok, err := ReadOrphan(ctx, rc, "p2", time.Hour); ok || err != nil {
		t.Errorf("a journal just written is an orphan (%v, %v)", ok, err)
	}
	if _, ok, err := ReadOrphan(ctx, rc, "p9", 0); ok || err != nil {
		t.Errorf("a missing journal is an orphan (%v, %v)", ok, err)
	}
	o, ok, err := ReadOrphan(ctx, rc, "p2", 0)
	if !ok || err != nil || o.ID != "p2" || len(o.Doc.Items("a")) != 1 {
		t.Fatalf("orphan p2: %+v, %v, %v", o, ok, err)
	}
	rc.put(layout.Journal("p2"), doc.Encode()) // its process lives
	if err := DeleteOrphan(ctx, rc, o); err != nil {
		t.Fatal(err)
	}
	if _, ok := rc.node(layout.Journal("p2")); !ok {
		t.Error("a journal written since it was read was deleted")
	}
	g, ok, err := ReadOrphan(ctx, rc, "p3", 0)
	if !ok || err != nil || len(g.Doc.Jobs) != 0 {
		t.Fatalf("orphan p3: %+v, %v, %v", g, ok, err)
	}
	if err := DeleteOrphan(ctx, rc, g); err != nil {
		t.Fatal(err)
	}
	if _, ok := rc.node(layout.Journal("p3")); ok {
		t.Error("the orphan was not deleted")
	}
	if err := DeleteOrphan(ctx, rc, g); err != nil {
		t.Errorf("deleting it again: %v", err)
	}
}

// Fold adds an entry to the record that names its journal and has it name
// none; a record that names another journal, or none, is left alone.
func TestFold(t *testing.T) {
	rc := newMemCenter()
	ctx := context.Background()
	const path = "/j/execution/0/completed"
	ran := [][2]int64{{at(0).UnixMilli(), at(5).UnixMilli()}}
	if err := Fold(ctx, rc, everySecond{}, path, "p2", 0, ran); err != nil {
		t.Errorf("no record: %v", err)
	}
	m := stored.Completed{Server: "s2", Fire: at(2).UnixMilli(), Ran: [][2]int64{{at(0).UnixMilli(), at(2).UnixMilli()}}, Journal: "p3"}
	rc.put(path, m.Marshal())
	if err := Fold(ctx, rc, everySecond{}, path, "p2", 0, ran); err != nil {
		t.Fatal(err)
	}
	n, _ := rc.node(path)
	if got, err := stored.DecodeCompleted(n.data); err != nil || got.Fire != at(2).UnixMilli() || got.Journal != "p3" {
		t.Errorf("a record naming another journal became %+v (%v)", got, err)
	}
	m.Journal = "p2"
	rc.put(path, m.Marshal())
	if err := Fold(ctx, rc, everySecond{}, path, "p2", 0, ran); err != nil {
		t.Fatal(err)
	}
	n, _ = rc.node(path)
	got, err := stored.DecodeCompleted(n.data)
	if err != nil || got.Fire != at(5).UnixMilli() || got.Journal != "" || len(got.Ran) != 1 || got.Ran[0] != ran[0] {
		t.Errorf("the folded record is %+v (%v); want it through %d, naming no journal", got, err, at(5).UnixMilli())
	}
}
