package job_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/jobhook"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// books is what the namespace's load table says (per server, and
// unplaced) or what the jobs' assignment nodes say.
type books struct {
	units    map[string]int
	unplaced int
}

func (b books) String() string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(b.units)) {
		parts = append(parts, fmt.Sprintf("%s:%d", s, b.units[s]))
	}
	return fmt.Sprintf("{%s unplaced:%d}", strings.Join(parts, " "), b.unplaced)
}

func (b books) equal(o books) bool { return b.unplaced == o.unplaced && maps.Equal(b.units, o.units) }

// readBooks reads the load table (through ReadNamespace, as the CLI and
// the console do) and the truth: every job's assignment nodes.
func readBooks(ctx context.Context, rc regcenter.Center, jobs []string) (table, truth books, err error) {
	ns, err := jobhook.ReadNamespace(ctx, rc, slog.New(slog.DiscardHandler))
	if err != nil {
		return books{}, books{}, err
	}
	table = books{units: map[string]int{}, unplaced: ns.Unplaced}
	for _, in := range ns.Instances {
		if in.Units > 0 {
			table.units[in.Server] = in.Units
		}
	}
	truth = books{units: map[string]int{}}
	for _, j := range jobs {
		u, err := jobhook.JobUnits(ctx, rc, j)
		if err != nil {
			return books{}, books{}, err
		}
		for s, n := range u.PerServer {
			truth.units[s] += n
		}
		truth.unplaced += u.Unplaced
	}
	if ns.Units != sumUnits(truth) {
		table.unplaced = -1 // K disagrees: make the comparison fail visibly
	}
	return table, truth, nil
}

func sumUnits(b books) int {
	k := b.unplaced
	for _, n := range b.units {
		k += n
	}
	return k
}

// waitBooksWithin waits up to deadline for the load table to say what the
// assignments say, and reports whether it did.
func waitBooksWithin(rc regcenter.Center, jobs []string, deadline time.Duration) (table, truth books, settled bool) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for {
		var err error
		table, truth, err = readBooks(ctx, rc, jobs)
		if err == nil && table.equal(truth) {
			return table, truth, true
		}
		select {
		case <-ctx.Done():
			return table, truth, false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitBooks waits until the load table says what the assignments say
// (they may differ for the moments between a leave and its repair) and
// returns them; it fails the test when they still differ at the deadline.
func waitBooks(t *testing.T, rc regcenter.Center, jobs []string, deadline time.Duration) books {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var table, truth books
	var err error
	for {
		table, truth, err = readBooks(ctx, rc, jobs)
		if err == nil && table.equal(truth) {
			return truth
		}
		select {
		case <-ctx.Done():
			detail := ""
			rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
			if data, _, gerr := rc.Get(rctx, "/.placement"); gerr == nil {
				detail += "\ntable: " + string(data)
			}
			for _, j := range jobs {
				u, jerr := jobhook.JobUnits(rctx, rc, j)
				detail += fmt.Sprintf("\n%s: %v %d unplaced (err %v)", j, u.PerServer, u.Unplaced, jerr)
			}
			rcancel()
			t.Fatalf("after %v the load table says %v, the assignments %v (err %v)%s", deadline, table, truth, err, detail)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// An instance shut down and started again under the same server id is
// counted once: the table says 9 and 9 units, as the assignments do, and
// the restarted instance, whose alarm is at 9, raises none.
func TestBooksRestartUnderSameID(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfgs, names := everySecondJobs(18, 1)
	ins := map[string]*instance{}
	for _, id := range []string{"s1", "s2"} {
		ins[id] = startJobs(t, ns, id, cfgs, rec)
	}
	obs := connectRaw(t, ns)
	settle(t, rec, time.Now(), names, []string{"s1", "s2"}, 30*time.Second)
	if b := waitBooks(t, obs, names, 20*time.Second); !maps.Equal(b.units, map[string]int{"s1": 9, "s2": 9}) {
		t.Fatalf("before the restart: %v", b)
	}

	ins["s2"].stop(t)
	alarms := make(chan job.Event, 16)
	ins["s2"] = startJobs(t, ns, "s2", cfgs, rec, job.WithAlarmThreshold(9), job.WithEventHandler(func(ev job.Event) {
		if ev.Kind == job.EventAlarm {
			select {
			case alarms <- ev:
			default:
			}
		}
	}))
	settle(t, rec, time.Now(), names, []string{"s1", "s2"}, 30*time.Second)
	b := waitBooks(t, obs, names, 20*time.Second)
	if !maps.Equal(b.units, map[string]int{"s1": 9, "s2": 9}) || b.unplaced != 0 {
		t.Fatalf("after s2 restarted under its id: %v, want s1:9 s2:9", b)
	}
	// The instance's own view, which its alarm is computed from.
	deadline := time.Now().Add(10 * time.Second)
	for ins["s2"].sched.Placement().Units != 9 {
		if time.Now().After(deadline) {
			t.Fatalf("s2's own placement says %d units, want 9", ins["s2"].sched.Placement().Units)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case ev := <-alarms:
		t.Fatalf("restarted s2 raised an alarm: %+v", ev)
	default:
	}
}

// The first application the books were found wrong in: two jobs of four
// items over three instances; one leaves cleanly, one is killed. The table
// credits the survivor with all eight units and keeps neither of the
// others.
func TestBooksAfterALeaveAndAKill(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfgs, names := everySecondJobs(2, 4)
	for i := range cfgs {
		cfgs[i].Failover = i == 0 // one job with failover, one without
	}
	ins := map[string]*instance{}
	for _, id := range []string{"s1", "s2", "s3"} {
		ins[id] = startJobs(t, ns, id, cfgs, rec)
	}
	obs := connectRaw(t, ns)
	settleItems(t, rec, time.Now(), names, 4, []string{"s1", "s2", "s3"}, 30*time.Second)
	waitBooks(t, obs, names, 20*time.Second)
	ins["s2"].stop(t)
	ins["s3"].crash(t)
	settleItems(t, rec, time.Now(), names, 4, []string{"s1"}, 30*time.Second)
	if b := waitBooks(t, obs, names, 20*time.Second); !maps.Equal(b.units, map[string]int{"s1": 8}) || b.unplaced != 0 {
		t.Fatalf("after a leave and a kill: %v, want s1:8", b)
	}
}

// Items that caps leave unplaced are owed their fires: once placed, each
// runs one make-up run that stands for the fires it missed, then its
// regular fires.
func TestUnplacedItemsMakeUpTheirFiresOnce(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	// Two instances that run another job make S = 3, so with the default
	// fault tolerance of 1 every server's cap is 1 + K/2: with K = 4 (the
	// other job never fires, so it holds nothing), 3. Only s1 runs
	// "capped", so one of its four items fits nowhere.
	other := everySecond("other", 1)
	other.Cron = "0 0 0 1 1 *" // registered; fires on 1 January only
	var others []*instance
	for _, id := range []string{"s2", "s3"} {
		others = append(others, startJobs(t, ns, id, []job.Config{other}, rec))
	}
	capped := everySecond("capped", 4)
	startJobs(t, ns, "s1", []job.Config{capped}, rec)
	obs := connectRaw(t, ns)

	// Wait for fires that ran three items, and the table to say one is
	// unplaced.
	fires := rec.waitFires(t, time.Now(), 2, 3, 30*time.Second)
	b := waitBooks(t, obs, []string{"capped", "other"}, 20*time.Second)
	if b.unplaced != 1 {
		t.Fatalf("books with caps: %v, want one unit unplaced", b)
	}
	var missing int
	for it := range 4 {
		ran := false
		for _, r := range rec.snapshot() {
			ran = ran || (r.job == "capped" && r.item == it)
		}
		if !ran {
			missing = it
		}
	}
	firstMissed := fires[0]

	// The other instances go: S = 1, no cap binds, the item is placed.
	for _, in := range others {
		in.stop(t)
	}
	var makeUp []record
	deadline := time.Now().Add(30 * time.Second)
	var placedAt time.Time
	for {
		makeUp = makeUp[:0]
		placedAt = time.Time{}
		for _, r := range rec.snapshot() {
			if r.job != "capped" || r.item != missing {
				continue
			}
			switch r.kind {
			case job.KindMisfire:
				makeUp = append(makeUp, r)
			case job.KindFire:
				if placedAt.IsZero() || r.fire.Before(placedAt) {
					placedAt = r.fire
				}
			}
		}
		if len(makeUp) > 0 && !placedAt.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("item %d: %d make-up runs and first regular fire %v within 30 s", missing, len(makeUp), placedAt)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Let a few more fires run: the make-up run must not come again.
	rec.waitFires(t, placedAt.Add(2*time.Second), 1, 4, 20*time.Second)
	makeUp = makeUp[:0]
	for _, r := range rec.snapshot() {
		if r.job == "capped" && r.item == missing && r.kind != job.KindFire {
			makeUp = append(makeUp, r)
		}
	}
	if len(makeUp) != 1 {
		t.Fatalf("item %d: %d make-up runs, want 1: %+v", missing, len(makeUp), makeUp)
	}
	m := makeUp[0]
	if m.fire.After(firstMissed) {
		t.Errorf("the make-up run starts at fire %v, after %v, which the item missed", m.fire, firstMissed)
	}
	if m.through.Before(placedAt.Add(-time.Second)) {
		t.Errorf("the make-up run stands for fires through %v; the item missed every fire before %v", m.through, placedAt)
	}
	if b := waitBooks(t, obs, []string{"capped", "other"}, 20*time.Second); !maps.Equal(b.units, map[string]int{"s1": 4}) || b.unplaced != 0 {
		t.Fatalf("books once placed: %v, want s1:4", b)
	}
}

// A property of the books: whatever instances do — join, leave, die,
// come back under the same id, drain and undrain, add jobs — the load
// table says what the jobs' assignment nodes say once the namespace
// settles. Each sequence runs in a namespace of its own, against the real
// ZooKeeper; SHARDJOB_BOOKS_SEQUENCES sets how many (default 30, from a
// new seed each run; `make test-books` runs 500), and SHARDJOB_BOOKS_SEED
// the generators' seed (printed) to run them again.
func TestBooksPropertyRandomSequences(t *testing.T) {
	sequences := 30
	if v := os.Getenv("SHARDJOB_BOOKS_SEQUENCES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SHARDJOB_BOOKS_SEQUENCES=%q: want a positive count", v)
		}
		sequences = n
	}
	if testing.Short() {
		sequences = 20
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (SHARDJOB_BOOKS_SEED reruns it)", seed)
	if v := os.Getenv("SHARDJOB_BOOKS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SHARDJOB_BOOKS_SEED=%q: %v", v, err)
		}
		seed = s
	}
	// Four workers, each a stream of sequences from its own generator:
	// most of a sequence's time is waiting for fires, so they overlap.
	const workers = 4
	var (
		mu    sync.Mutex
		steps = map[string]int{}
	)
	t.Cleanup(func() { t.Logf("%d sequences; steps taken: %v", sequences, steps) })
	for w := range workers {
		t.Run(fmt.Sprintf("worker%d", w), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := w; i < sequences; i += workers {
				t.Run(fmt.Sprintf("seq%03d", i), func(t *testing.T) {
					taken := runBooksSequence(t, rng, 4)
					mu.Lock()
					for _, s := range taken {
						steps[s]++
					}
					mu.Unlock()
				})
				if t.Failed() {
					return
				}
			}
		})
	}
}

// waitAnyFire waits until some execution after since is recorded, or the
// deadline passes (no job may run anywhere).
func waitAnyFire(rec *recorder, since time.Time, deadline time.Duration) {
	timeout := time.After(deadline)
	for {
		for _, r := range rec.snapshot() {
			if r.begin.After(since) {
				return
			}
		}
		select {
		case <-rec.sig:
		case <-time.After(100 * time.Millisecond):
		case <-timeout:
			return
		}
	}
}

// runBooksSequence runs n random steps in a namespace of its own,
// checking the books after each, and returns the steps' names.
func runBooksSequence(t *testing.T, rng *rand.Rand, n int) []string {
	ns := namespace(t)
	quiet := job.WithLogger(testLogger(t).With("quiet", true))
	obs := connectRaw(t, ns)
	rec := newRecorder()
	var (
		jobs  []job.Config
		names []string
		live  = map[string]*instance{}
		ids   []string // every id used, for restarts
		next  int
		taken []string
	)
	newJob := func() job.Config {
		cfg := everySecond(fmt.Sprintf("j%d", len(jobs)), 1+rng.IntN(3))
		cfg.Failover = rng.IntN(2) == 0
		jobs = append(jobs, cfg)
		names = append(names, cfg.Name)
		return cfg
	}
	start := func(id string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rc, s := connect(t, ctx, ns, id, quiet)
		for _, cfg := range jobs {
			if rng.IntN(4) > 0 { // most jobs, not always all
				if err := s.Add(ctx, cfg, rec.job(id)); err != nil {
					t.Fatal(err)
				}
			}
		}
		live[id] = running(t, ctx, id, rc, s)
	}
	pick := func() (string, *instance) {
		ks := slices.Sorted(maps.Keys(live))
		id := ks[rng.IntN(len(ks))]
		return id, live[id]
	}
	newJob()
	newJob()
	for range 2 {
		id := fmt.Sprintf("s%d", next)
		next++
		ids = append(ids, id)
		start(id)
	}
	waitBooks(t, obs, names, 20*time.Second)
	for range n {
		step := []string{"join", "leave", "kill", "restart", "drain", "add-job"}[rng.IntN(6)]
		if len(live) <= 1 && (step == "leave" || step == "kill") {
			step = "join"
		}
		began := time.Now()
		switch step {
		case "join":
			id := fmt.Sprintf("s%d", next)
			next++
			ids = append(ids, id)
			start(id)
		case "leave":
			id, in := pick()
			in.stop(t)
			delete(live, id)
		case "kill":
			id, in := pick()
			in.crash(t)
			delete(live, id)
		case "restart":
			// Under an id live now, or one that left or died before.
			id := ids[rng.IntN(len(ids))]
			if in, ok := live[id]; ok {
				in.stop(t)
			}
			start(id)
		case "drain":
			id, _ := pick()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if rng.IntN(3) == 0 {
				if err := job.Undrain(ctx, obs, id); err != nil {
					t.Fatal(err)
				}
			} else if err := job.Drain(ctx, obs, id); err != nil {
				t.Fatal(err)
			}
			cancel()
		case "add-job":
			cfg := newJob()
			_, in := pick()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := in.sched.Add(ctx, cfg, rec.job(in.id)); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		taken = append(taken, step)
		stepped := time.Now()
		if step == "kill" {
			// A process killed between a change to an assignment and its
			// repair (the change is its leave or a departure it queued)
			// leaves the repair to the namespace review that every
			// scheduler makes once per reconcile round (a minute): the
			// test makes that round when the books have not settled in
			// 5 s. Other steps kill nothing, and get no such help.
			if _, _, settled := waitBooksWithin(obs, names, 5*time.Second); !settled {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := job.ReviewBooks(ctx, obs)
				cancel()
				if err != nil {
					t.Fatalf("review: %v", err)
				}
				t.Logf("kill: the books settled through the namespace review")
			}
		}
		waitBooks(t, obs, names, 20*time.Second)
		if rng.IntN(2) == 0 {
			// Let the jobs fire (and reshard) before the next step, half
			// the time: a fire after the step, if any job runs anywhere.
			waitAnyFire(rec, stepped, 3*time.Second)
			waitBooks(t, obs, names, 20*time.Second)
		}
		t.Logf("%s: books right %v after the step, which took %v", step, time.Since(stepped).Round(time.Millisecond), stepped.Sub(began).Round(time.Millisecond))
	}
	for id, in := range live {
		in.stop(t)
		delete(live, id)
	}
	return taken
}

// The namespace-wide review repairs an entry that credits a server that is
// gone, in a job nobody runs any more: the case of a repair lost with the
// process that should have made it.
func TestBooksReviewRepairsAJobNobodyLeads(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	cfg := everySecond("orphan", 2)
	in := startJobs(t, ns, "s1", []job.Config{cfg}, rec)
	obs := connectRaw(t, ns)
	rec.waitFires(t, time.Now(), 1, 2, 30*time.Second)
	if b := waitBooks(t, obs, []string{"orphan"}, 20*time.Second); !maps.Equal(b.units, map[string]int{"s1": 2}) {
		t.Fatalf("books: %v", b)
	}
	in.crash(t)
	// What a leave whose repair was lost leaves behind: the assignment
	// cleared, the table not told.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := obs.Set(ctx, "/orphan/servers/s1/sharding", nil, -1); err != nil {
		t.Fatal(err)
	}
	if table, truth, err := readBooks(ctx, obs, []string{"orphan"}); err != nil || table.equal(truth) {
		t.Fatalf("before the review: table %v, truth %v, err %v; want them apart", table, truth, err)
	}
	if err := job.ReviewBooks(ctx, obs); err != nil {
		t.Fatal(err)
	}
	table, truth, err := readBooks(ctx, obs, []string{"orphan"})
	if err != nil || !table.equal(truth) || len(truth.units) != 0 {
		t.Fatalf("after the review: table %v, truth %v, err %v", table, truth, err)
	}
}

// A leader whose reshard cleared a departed instance's assignment (its
// items queued for failover) and was cut by its stop before it committed
// repairs the load table as it leaves, holding no item itself: nobody else
// runs the job, and the table would credit the dead instance until the
// namespace review.
func TestBooksRightWhenAStopCutsADeparturesReshard(t *testing.T) {
	ns := namespace(t)
	obs := observer(t, ns)
	// s0 holds nothing (disabled), s1 the job's one item.
	if _, err := obs.Create(tctx(t), "/solo/servers/s0/disabled", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	cfg := everySecond("solo", 1)
	cfg.Failover = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var w *job.HeldWrite
	rc0, s0 := connectVia(t, ctx, ns, "s0", func(rc regcenter.Center) regcenter.Center {
		w = job.NewHeldWrite(rc, layout.Placement)
		return w
	})
	defer w.Release()
	if err := s0.Add(ctx, cfg, rec.job("s0")); err != nil {
		t.Fatal(err)
	}
	in0 := running(t, ctx, "s0", rc0, s0)
	in1 := startInstance(t, ns, "s1", cfg, rec)
	rec.waitFires(t, time.Now(), 1, 1, 30*time.Second)
	if got := waitBooks(t, obs, []string{"solo"}, 20*time.Second); got.units["s1"] != 1 {
		t.Fatalf("books %v, want s1 holding the item", got)
	}
	// s1 dies; s0, leading now, queues its item and clears its assignment,
	// and its reshard's transaction (with the table) is held, then cut as
	// s0 stops: the connection lost under it.
	w.Armed.Store(true)
	in1.crash(t)
	select {
	case <-w.Held():
	case <-ctx.Done():
		t.Fatal("s0 never resharded after s1 died")
	}
	stopped := make(chan struct{})
	go func() { // owned here: waited for below
		defer close(stopped)
		in0.stop(t)
	}()
	w.Fail(regcenter.ErrConnectionLoss)
	<-stopped
	table, truth, settled := waitBooksWithin(obs, []string{"solo"}, 5*time.Second)
	if !settled {
		t.Fatalf("after the stop the load table says %v, the assignments %v", table, truth)
	}
}

// A stop whose leader duties clear a departure after its leave leaves the
// load table true when it returns. The leader's membership check runs until
// the stop's background work ends, and its own repair, bound to the job's
// life, does not run then: a, the job's leader, stops with a run in flight
// (its leave and the leave's repair done); b, the only other instance, dies
// meanwhile; a's check queues b's item and clears b's assignment. Once a's
// stop returns, the table credits nobody, as the assignments say, with no
// namespace review.
func TestBooksRightAfterAStopThatClearedADeparture(t *testing.T) {
	ns := namespace(t)
	cfg := everySecond("leaving", 2)
	cfg.Failover = true
	names := []string{cfg.Name}
	var hold atomic.Bool
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	jobA := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		if hold.CompareAndSwap(true, false) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rcA, sA := connect(t, ctx, ns, "a")
	if err := sA.Add(ctx, cfg, jobA); err != nil {
		t.Fatal(err)
	}
	a := running(t, ctx, "a", rcA, sA)
	b := startJobs(t, ns, "b", []job.Config{cfg}, newRecorder())
	obs := connectRaw(t, ns)
	if got := leaderOf(t, obs, cfg.Name); got != "a" {
		t.Fatalf("the job's leader is %q, want a (the first to start)", got)
	}
	booksSay := func(want map[string]int, what string) {
		t.Helper()
		for {
			table, truth, err := readBooks(ctx, obs, names)
			if err == nil && table.equal(truth) && maps.Equal(truth.units, want) && truth.unplaced == 0 {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: the table says %v, the assignments %v (err %v), want %v", what, table, truth, err, want)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	booksSay(map[string]int{"a": 1, "b": 1}, "both running")

	hold.Store(true)
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("a ran nothing")
	}
	stopped := make(chan error, 1)
	go func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		stopped <- sA.Shutdown(sctx)
	}()
	// a has left, and its leave's repair told the table, while its run
	// goes on and it still leads.
	booksSay(map[string]int{"b": 1}, "a left")
	b.crash(t)
	// a's membership check queues b's item and clears its assignment.
	for {
		u, err := jobhook.JobUnits(ctx, obs, cfg.Name)
		if err == nil && len(u.PerServer) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("b's assignment was not cleared: %v (err %v)", u.PerServer, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("a's stop: %v", err)
	}
	a.sched = nil // stopped: the cleanup's stop has nothing to do
	a.rc.Close()
	table, truth, err := readBooks(ctx, obs, names)
	if err != nil || !table.equal(truth) || len(truth.units) != 0 {
		t.Fatalf("after a's stop the table says %v, the assignments %v (err %v): want both to credit nobody", table, truth, err)
	}
}
