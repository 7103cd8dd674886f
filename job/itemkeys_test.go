package job_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
)

// keyedJob is a job whose items come from a list the test changes; it
// records every run with its key.
type keyedJob struct {
	server string
	src    *keySource
	runs   *keyRuns
}

type keySource struct {
	mu   sync.Mutex
	keys []string
	err  error
}

func (s *keySource) set(keys []string, err error) {
	s.mu.Lock()
	s.keys, s.err = keys, err
	s.mu.Unlock()
}

type keyRun struct {
	server, key string
	item        int
	fire        time.Time
}

type keyRuns struct {
	mu   sync.Mutex
	runs []keyRun
}

func (l *keyRuns) snapshot() []keyRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.runs)
}

func (j *keyedJob) Execute(_ context.Context, sc job.ShardingContext) error {
	j.runs.mu.Lock()
	j.runs.runs = append(j.runs.runs, keyRun{server: j.server, key: sc.ItemKey, item: sc.Item, fire: sc.FireTime})
	j.runs.mu.Unlock()
	return nil
}

func (j *keyedJob) ListItems(context.Context) ([]string, error) {
	j.src.mu.Lock()
	defer j.src.mu.Unlock()
	return slices.Clone(j.src.keys), j.src.err
}

// byFire groups runs by fire: each key's runs at that fire.
func byFire(runs []keyRun) map[time.Time]map[string][]keyRun {
	out := map[time.Time]map[string][]keyRun{}
	for _, r := range runs {
		if out[r.fire] == nil {
			out[r.fire] = map[string][]keyRun{}
		}
		out[r.fire][r.key] = append(out[r.fire][r.key], r)
	}
	return out
}

// keyedRig is two instances of a keyed job firing every second.
type keyedRig struct {
	ns   string
	src  *keySource
	runs *keyRuns
	evs  *eventLog
}

func newKeyedRig(t *testing.T, name string, items int, keys []string) *keyedRig {
	t.Helper()
	rig := &keyedRig{ns: namespace(t), src: &keySource{keys: keys}, runs: &keyRuns{}, evs: &eventLog{}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := job.Config{Name: name, Cron: "* * * * * *", ShardingTotalCount: items}
	for _, id := range []string{"s1", "s2"} {
		rc, s := connect(t, ctx, rig.ns, id, job.WithEventHandler(rig.evs.add))
		if err := s.Add(ctx, cfg, &keyedJob{server: id, src: rig.src, runs: rig.runs}); err != nil {
			t.Fatal(err)
		}
		running(t, ctx, id, rc, s)
	}
	return rig
}

// waitFire waits for a fire after since in which exactly keys ran, each
// once, and returns it.
func (rig *keyedRig) waitFire(t *testing.T, since time.Time, keys []string) map[string][]keyRun {
	t.Helper()
	var got map[string][]keyRun
	waitUntil(t, 30*time.Second, func() bool {
		for fire, runs := range byFire(rig.runs.snapshot()) {
			if fire.After(since) && len(runs) == len(keys) && allOnce(runs, keys) {
				got = runs
				return true
			}
		}
		return false
	})
	return got
}

func allOnce(runs map[string][]keyRun, keys []string) bool {
	for _, k := range keys {
		if len(runs[k]) != 1 {
			return false
		}
	}
	return true
}

// A job whose items come from data runs each key once per fire, on the
// item the key keeps while it is listed: when the list changes, the keys
// that stay keep their items and so their servers, a new key takes a
// freed item, a key that left runs no more, and an item without a key
// runs nothing.
func TestItemsFromDataRunEachKeyOnceStickyByKey(t *testing.T) {
	rig := newKeyedRig(t, "tenants", 6, []string{"tenant-d", "tenant-a", "tenant-c", "tenant-b"})
	before := rig.waitFire(t, time.Time{}, []string{"tenant-a", "tenant-b", "tenant-c", "tenant-d"})
	servers := map[string]bool{}
	for k, rs := range before {
		if want := int(k[len(k)-1] - 'a'); rs[0].item != want {
			t.Errorf("%s ran as item %d, want %d (new keys sorted, lowest items first)", k, rs[0].item, want)
		}
		servers[rs[0].server] = true
	}
	if len(servers) != 2 {
		t.Errorf("the keys ran on %v, want both instances", servers)
	}

	changed := time.Now()
	rig.src.set([]string{"tenant-a", "tenant-b", "tenant-d", "tenant-e"}, nil)
	after := rig.waitFire(t, changed, []string{"tenant-a", "tenant-b", "tenant-d", "tenant-e"})
	for _, k := range []string{"tenant-a", "tenant-b", "tenant-d"} {
		b, a := before[k][0], after[k][0]
		if a.item != b.item || a.server != b.server {
			t.Errorf("%s moved: item %d on %s, then item %d on %s", k, b.item, b.server, a.item, a.server)
		}
	}
	if e := after["tenant-e"][0]; e.item != before["tenant-c"][0].item {
		t.Errorf("tenant-e took item %d, want tenant-c's freed item %d", e.item, before["tenant-c"][0].item)
	}
	if ev, ok := rig.evs.find("tenants", job.EventItemsListed); !ok || ev.Units != 4 {
		t.Errorf("items-listed event %+v (found %v), want one with 4 keys", ev, ok)
	}
	// At every fire each listed key ran at most once, and no run lacked
	// its key (items 4 and 5 have none: they run nothing).
	var lastC time.Time
	for fire, runs := range byFire(rig.runs.snapshot()) {
		for k, rs := range runs {
			if k == "" {
				t.Errorf("fire %v: an item without a key ran: %+v", fire, rs)
			}
			if len(rs) > 1 {
				t.Errorf("fire %v: key %s ran %d times: %+v", fire, k, len(rs), rs)
			}
		}
		if len(runs["tenant-c"]) > 0 && fire.After(lastC) {
			lastC = fire
		}
	}
	for fire, runs := range byFire(rig.runs.snapshot()) {
		if len(runs["tenant-e"]) > 0 && !fire.After(lastC) {
			t.Errorf("tenant-e ran at %v, at or before tenant-c's last fire %v on its item", fire, lastC)
		}
	}
}

// A source that fails, or returns a list that cannot be stored, keeps
// the last list in force, and says why; a stored list that does not
// decode fails the runs that need it (none runs without its key) until
// the leader stores a new one.
func TestItemsFromDataKeepTheLastListOnABadRead(t *testing.T) {
	rig := newKeyedRig(t, "files", 3, []string{"x", "y"})
	rig.waitFire(t, time.Time{}, []string{"x", "y"})
	for _, c := range []struct {
		keys []string
		err  error
		says string
	}{
		{nil, errors.New("bucket unreachable"), "bucket unreachable"},
		{[]string{"x", "y", "z", "w"}, nil, "4 keys, the job has 3 items"},
		{[]string{"x", "x"}, nil, `"x" is listed twice`},
		{[]string{"x", strings.Repeat("k", job.MaxItemKeyLength+1)}, nil, "257 bytes"},
	} {
		since := time.Now()
		rig.src.set(c.keys, c.err)
		waitUntil(t, 30*time.Second, func() bool {
			return rig.evs.has("files", job.EventItemsKept, func(ev job.Event) bool {
				return ev.Err != nil && strings.Contains(ev.Err.Error(), c.says)
			})
		})
		rig.waitFire(t, since.Add(time.Second), []string{"x", "y"})
	}

	// Garbage in the node: runs fail with ErrItemKeys, none runs without
	// its key; the leader's next read stores a good list again.
	rig.src.set([]string{"x", "y"}, nil)
	obs := observer(t, rig.ns)
	if _, err := obs.Set(tctx(t), layout.Job("files").ItemKeys(), []byte(`{"keys":[`), -1); err != nil {
		t.Fatal(err)
	}
	rig.waitFire(t, time.Now().Add(time.Second), []string{"x", "y"})
	data, _, err := obs.Get(tctx(t), layout.Job("files").ItemKeys())
	if err != nil || !strings.Contains(string(data), `"x"`) {
		t.Fatalf("item keys node %q, %v: want a good list stored again", data, err)
	}
	for _, r := range rig.runs.snapshot() {
		if r.key == "" {
			t.Errorf("a run without a key: %+v", r)
		}
	}
}

// The keys are in the registry for operators and other tools to read:
// the stored list names each key's item.
func TestItemsFromDataAreStoredWithTheirItems(t *testing.T) {
	rig := newKeyedRig(t, "buckets", 4, []string{"b1", "b0"})
	rig.waitFire(t, time.Time{}, []string{"b0", "b1"})
	data, _, err := observer(t, rig.ns).Get(tctx(t), layout.Job("buckets").ItemKeys())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"keys":["b0","b1","",""]`) {
		t.Fatalf("stored %s, want keys b0 and b1 on items 0 and 1", data)
	}
}

// keyedRanges is a range job whose items come from a list: it records
// the keys each range call got.
type keyedRanges struct {
	keys []string
	mu   sync.Mutex
	got  map[time.Time][][]string
}

func (j *keyedRanges) ListItems(context.Context) ([]string, error) { return j.keys, nil }

func (j *keyedRanges) Execute(context.Context, job.ShardingContext) error {
	return errors.New("a range job is called by range")
}

func (j *keyedRanges) ExecuteRange(_ context.Context, rc job.RangeContext) error {
	j.mu.Lock()
	j.got[rc.FireTime] = append(j.got[rc.FireTime], slices.Clone(rc.Keys))
	j.mu.Unlock()
	return nil
}

// A range job whose items come from data gets, with SCOPE, one
// contiguous block of keys per instance: the keys of its range's items.
func TestItemsFromDataGiveARangeJobBlocksOfKeys(t *testing.T) {
	ns := namespace(t)
	rj := &keyedRanges{keys: []string{"f", "b", "e", "a", "d", "c"}, got: map[time.Time][][]string{}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := job.Config{Name: "blocks", Cron: "* * * * * *", ShardingTotalCount: 6, ShardingStrategy: "SCOPE"}
	for _, id := range []string{"s1", "s2"} {
		rc, s := connect(t, ctx, ns, id)
		if err := s.Add(ctx, cfg, rj); err != nil {
			t.Fatal(err)
		}
		running(t, ctx, id, rc, s)
	}
	want := [][]string{{"a", "b", "c"}, {"d", "e", "f"}}
	waitUntil(t, 30*time.Second, func() bool {
		rj.mu.Lock()
		defer rj.mu.Unlock()
		for _, calls := range rj.got {
			c := slices.Clone(calls)
			slices.SortFunc(c, func(x, y []string) int { return strings.Compare(strings.Join(x, ","), strings.Join(y, ",")) })
			if len(c) == 2 && slices.Equal(c[0], want[0]) && slices.Equal(c[1], want[1]) {
				return true
			}
		}
		return false
	})
}
