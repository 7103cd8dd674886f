package job

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/etcd" // regcenter.Open serves Config.Etcd
	"github.com/shardjob/shardjob/regcenter/etcdtest"
	"github.com/shardjob/shardjob/regcenter/zktest"
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // regcenter.Open serves Config.Servers
)

// TestAFireHeldUpBeforeCollapsedFiresIsMadeUpWithThem: a fire held up
// behind another in coordination (a reshard wait, a slow registry) waits
// for the fire order; meanwhile the process stalls, and the trigger
// collapses the next fire into a later one, whose fire notes it as missed
// before it waits for the fire order in turn. The held-up fire, first to
// take the order, finds that miss and makes it up with itself: its run
// must start at its own fire. Started at the collapsed one, it stood for
// neither the held-up fire nor the fires dispatched between, which found
// the item run here through them: on etcd under load (scalebench's rolling
// restart), "the fire of :45 started 10 s late, the make-up after it began
// at :51, fires :46-:50 never ran".
//
// The fires are called in the order the goroutines of the stall took the
// fire order: the later fire's note, the held-up fire, the later fire.
func TestAFireHeldUpBeforeCollapsedFiresIsMadeUpWithThem(t *testing.T) {
	for _, registry := range []string{"zookeeper", "etcd"} {
		t.Run(registry, func(t *testing.T) { heldUpFireIsMadeUp(t, testRegistryConfig(t, registry)) })
	}
}

// testRegistryConfig starts a registry server of kind registry (zookeeper
// or etcd) for t, and returns a center's config on it.
func testRegistryConfig(t *testing.T, registry string) regcenter.Config {
	rcfg := regcenter.Config{Namespace: "order", SessionTimeout: 4 * time.Second}
	if registry == "etcd" {
		rcfg.Etcd = etcdtest.Start(t).Endpoints()
	} else {
		rcfg.Servers = zktest.Start(t).Servers()
	}
	return rcfg
}

// ranRecord is one run of the test's job: the fires it stood for.
type ranRecord struct {
	kind          Kind
	fire, through time.Time
}

// orderJob starts a scheduler on rcfg with one job of one item, firing on
// the first of every month, whose runs it records. The scheduler's own
// trigger fires none while a test runs; the test fires the job itself at
// the latest five fires come (fires), which run at once.
func orderJob(t *testing.T, rcfg regcenter.Config) (r *runner, fires []time.Time, ran func() []ranRecord) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := regcenter.Open(ctx, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rc.Close(); err != nil {
			t.Errorf("closing the registry: %v", err)
		}
	})
	var mu sync.Mutex
	var runs []ranRecord
	record := SimpleFunc(func(_ context.Context, sc ShardingContext) error {
		mu.Lock()
		runs = append(runs, ranRecord{kind: sc.Kind, fire: sc.FireTime, through: sc.Through})
		mu.Unlock()
		return nil
	})
	cfg := Config{Name: "order", Cron: "0 0 0 1 * *", TimeZone: "UTC", ShardingTotalCount: 1}
	_, r = runOneJob(t, rc, cfg, record)
	if err := r.prepareSync(); err != nil {
		t.Fatal(err)
	}
	sched, _, err := r.config().Schedule()
	if err != nil {
		t.Fatal(err)
	}
	fires = make([]time.Time, 5)
	for i, at := len(fires)-1, time.Now(); i >= 0; i-- {
		fires[i] = fireplan.Prev(sched, at)
		at = fires[i].Add(-time.Millisecond)
	}
	return r, fires, func() []ranRecord {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(runs)
	}
}

// checkOnce fails t unless each of fires is stood for by exactly one of
// runs.
func checkOnce(t *testing.T, fires []time.Time, runs []ranRecord) {
	t.Helper()
	for _, f := range fires {
		n := 0
		for _, run := range runs {
			if !f.Before(run.fire) && !f.After(run.through) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the fire of %s stood for by %d runs, want 1; runs:%s", f.Format(time.DateOnly), n, describeRuns(runs))
		}
	}
}

func heldUpFireIsMadeUp(t *testing.T, rcfg regcenter.Config) {
	r, fires, ran := orderJob(t, rcfg)
	// The last fire, the latest come, is one a make-up run reserved now
	// stands for.
	first, heldUp, collapsed, later := fires[0], fires[1], fires[2], fires[3]

	r.fireScheduled(first, time.Time{}) // the item is this instance's, and its mark held
	// The later fire, into which the trigger collapsed the one before it,
	// notes that one as missed (fireScheduled's first step) and waits for
	// the fire order, which the held-up fire takes first.
	r.book.NoteSuspendedMiss(collapsed)
	r.fireScheduled(heldUp, time.Time{})
	r.fireScheduled(later, time.Time{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !r.book.WaitIdle(ctx) {
		t.Fatal("the runs did not end")
	}
	checkOnce(t, fires, ran())
}

// TestFiresReserveInTheOrderTheyWereDispatched: fires waiting for the fire
// order behind one held up in coordination reserve their item in fire
// order, whichever of them came to wait first. A later fire that went
// first ran as a plain fire, and the earlier one then found the item run
// here through it and ran nothing: on etcd under load, an instance's fire
// of :18, dispatched as the fire of :58 let the order go, took it before
// the fires of :59 to :17, which waited for it; those never ran.
func TestFiresReserveInTheOrderTheyWereDispatched(t *testing.T) {
	for _, registry := range []string{"zookeeper", "etcd"} {
		t.Run(registry, func(t *testing.T) {
			r, fires, ran := orderJob(t, testRegistryConfig(t, registry))
			r.fireScheduled(fires[0], time.Time{}) // the item is this instance's, and its mark held

			// A fire held up in coordination has the order; the two after
			// it are dispatched, and the later one waits first.
			heldUp := r.active().firer.Order.Enter()
			r.active().firer.Order.Await(heldUp, nil)
			r.active().firer.Order.Lock()
			earlier, later := r.active().firer.Order.Enter(), r.active().firer.Order.Enter()
			var wg sync.WaitGroup
			wg.Go(func() { r.fireInTurn(fires[2], time.Time{}, later) })
			awaitCond(t, "the later fire waits for the fire order", func() bool { return waitsFor(r, heldUp) })
			// The held-up fire has reserved: the later fire runs (and its
			// item is free again), or waits for the earlier one's turn,
			// before the earlier fire comes.
			r.active().firer.Order.Unlock()
			r.active().firer.Order.Leave(heldUp)
			awaitCond(t, "the later fire has run or waits for the earlier one", func() bool {
				for _, run := range ran() {
					if run.fire.Equal(fires[2]) && !r.book.IsRunning(0) {
						return true
					}
				}
				return waitsFor(r, earlier)
			})
			wg.Go(func() { r.fireInTurn(fires[1], time.Time{}, earlier) })
			wg.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if !r.book.WaitIdle(ctx) {
				t.Fatal("the runs did not end")
			}
			checkOnce(t, fires[:3], ran())
		})
	}
}

// waitsFor reports whether a fire waits for turn, the first turn of r's
// fire order, to be over.
func waitsFor(r *runner, turn uint64) bool {
	waiting, awaited := r.active().firer.Order.Waiting()
	return awaited && len(waiting) > 0 && waiting[0] == turn
}

// awaitCond waits until cond holds, failing t after a minute.
func awaitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
	}
}

// describeRuns lists runs, by the dates of the fires they stood for.
func describeRuns(runs []ranRecord) string {
	s := ""
	for _, r := range runs {
		s += fmt.Sprintf(" %s[%s..%s]", r.kind, r.fire.Format(time.DateOnly), r.through.Format(time.DateOnly))
	}
	return s
}

// TestAMakeUpRunOfItemsGainedMakesUpTheirPreviousOwnersGap: an instance
// whose first fire after a reshard gave it an item makes up fires it
// skipped (collapsed by a stall, or missed while it could not read its
// assignment): the item's previous owner left fires undone before it, and
// the make-up run must start at the first of them, as a plain fire's
// would (inheritedGaps). Started at the fires this instance skipped, it
// left the gap to nobody: on etcd under load, s000009 item 1 ran on i5
// through :19, i5 stopped, and its new owner's first run, a make-up run
// of the fire of :30 the trigger collapsed into :31, stood for :30 on;
// :20 to :29 never ran.
func TestAMakeUpRunOfItemsGainedMakesUpTheirPreviousOwnersGap(t *testing.T) {
	for _, registry := range []string{"zookeeper", "etcd"} {
		t.Run(registry, func(t *testing.T) {
			rcfg := testRegistryConfig(t, registry)
			r, fires, ran := orderJob(t, rcfg)
			r.fireScheduled(fires[0], time.Time{}) // the item's record lists the first fire

			// Another instance starts, and this one leaves the job: the
			// reshard at the other's first fire gives it the item, whose
			// fires between were left undone.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rc, err := regcenter.Open(ctx, rcfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := rc.Close(); err != nil {
					t.Errorf("closing the registry: %v", err)
				}
			})
			_, b := runOneJob(t, rc, r.config().Config, r.job, WithServerID("two"))
			if err := b.prepareSync(); err != nil {
				t.Fatal(err)
			}
			if err := r.s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			// b's first fire there, the latest but one, is one a stall
			// collapsed the fire before into.
			b.book.NoteSuspendedMiss(fires[3])
			b.fireScheduled(fires[4], time.Time{})
			if !b.book.WaitIdle(ctx) {
				t.Fatal("the runs did not end")
			}
			checkOnce(t, fires, ran())
		})
	}
}

// TestFiresMissedWhileDownAreMadeUpAfterTheFiresBefore: the fires a stall
// collapsed, noted by the fire after them, are made up once the session is
// back (fireMissedWhileDown) — after the fires dispatched before them
// have reserved, one of which takes them in. Run at once, from the
// collapsed fires on, the make-up run had the fires before them, held up
// behind a fire slow in coordination, find the item run here through them:
// on etcd under load an instance ran s000080 item 1's fire of :17 late,
// then the fires of :21 on, and :18 to :20 never ran.
func TestFiresMissedWhileDownAreMadeUpAfterTheFiresBefore(t *testing.T) {
	for _, registry := range []string{"zookeeper", "etcd"} {
		t.Run(registry, func(t *testing.T) {
			r, fires, ran := orderJob(t, testRegistryConfig(t, registry))
			r.fireScheduled(fires[0], time.Time{}) // the item is this instance's, and its mark held

			// A fire held up in coordination has the order, and the fire
			// after it waits. A stall collapsed the next one into a later
			// fire, which noted it; the session comes back meanwhile.
			heldUp := r.active().firer.Order.Enter()
			r.active().firer.Order.Await(heldUp, nil)
			r.active().firer.Order.Lock()
			waiting := r.active().firer.Order.Enter()
			var wg sync.WaitGroup
			wg.Go(func() { r.fireInTurn(fires[1], time.Time{}, waiting) })
			awaitCond(t, "the fire after waits for the fire order", func() bool { return waitsFor(r, heldUp) })
			r.book.NoteSuspendedMiss(fires[2])
			wg.Go(func() { r.fireMissedWhileDown(r.rc.Session()) })
			awaitCond(t, "the fires missed have run, or wait for the fires before", func() bool {
				for _, run := range ran() {
					if !fires[2].Before(run.fire) && !fires[2].After(run.through) && !r.book.IsRunning(0) {
						return true
					}
				}
				waiting, _ := r.active().firer.Order.Waiting()
				return len(waiting) == 3
			})
			r.active().firer.Order.Unlock()
			r.active().firer.Order.Leave(heldUp)
			wg.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if !r.book.WaitIdle(ctx) {
				t.Fatal("the runs did not end")
			}
			checkOnce(t, fires, ran())
		})
	}
}

// TestAGainedItemsLaterFiresItsRecordListsAreNotRunAgain: a new owner
// reads the records of the items it gains (inheritedGaps) and leaves
// unrun the fire it gains them at when the record lists it (ranBefore).
// The previous owner may have run later fires too, ahead of the new
// owner's fires — held up behind a stall or a slow registry, they come
// after — and the new owner's later fires must find them in the record
// as read, not run them again: each item held since the gain was run as
// a plain fire, and a fire the record listed ran twice.
func TestAGainedItemsLaterFiresItsRecordListsAreNotRunAgain(t *testing.T) {
	for _, registry := range []string{"zookeeper", "etcd"} {
		t.Run(registry, func(t *testing.T) {
			rcfg := testRegistryConfig(t, registry)
			r, fires, ran := orderJob(t, rcfg)
			r.fireScheduled(fires[0], time.Time{})
			// A stall collapsed the fires after the first into the last,
			// which makes them up in one run: the record lists them all.
			r.book.NoteSuspendedMiss(fires[1])
			r.fireScheduled(fires[4], time.Time{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if !r.book.WaitIdle(ctx) {
				t.Fatal("the runs did not end")
			}

			// Another instance starts, and this one leaves the job: the
			// item is the other's at its next fire.
			rc, err := regcenter.Open(ctx, rcfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := rc.Close(); err != nil {
					t.Errorf("closing the registry: %v", err)
				}
			})
			_, b := runOneJob(t, rc, r.config().Config, r.job, WithServerID("two"))
			if err := b.prepareSync(); err != nil {
				t.Fatal(err)
			}
			if err := r.s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			// The other's fires of the last two come only now: the first
			// gains the item, and each finds its fire in the record.
			b.fireScheduled(fires[3], time.Time{})
			b.fireScheduled(fires[4], time.Time{})
			if !b.book.WaitIdle(ctx) {
				t.Fatal("the runs did not end")
			}
			checkOnce(t, fires, ran())
		})
	}
}

// TestADebtIsReservedAfterTheFiresDispatchedBefore: a debt (runOwed) is
// reserved in a turn of the fire order, after the scheduled fires
// dispatched before it. Reserved at once, while a fire waited behind one
// held up in coordination, its make-up run stood for those fires too; the
// item's record, listing a fire another instance ran, narrowed the run to
// the fires before that one and left a debt since the fire after it
// (Narrow's rest). A held-up fire that reserved before that debt was paid
// found a debt of a later fire only, ran as a plain fire the fire the
// record listed, and paid that debt with it: one fire ran twice, and the
// fires after it never ran. Reserved in its turn, the debt is the held-up
// fire's to make up, narrowed by the record.
func TestADebtIsReservedAfterTheFiresDispatchedBefore(t *testing.T) {
	for _, registry := range []string{"zookeeper", "etcd"} {
		t.Run(registry, func(t *testing.T) {
			r, fires, ran := orderJob(t, testRegistryConfig(t, registry))
			r.fireScheduled(fires[0], time.Time{}) // the item is this instance's, and its mark held
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if !r.book.WaitIdle(ctx) {
				t.Fatal("the runs did not end")
			}
			// The second fire found the item's mark held by another run,
			// and owes it; another instance ran the third fire meanwhile,
			// and recorded it (a failover claimer, an owner before a
			// reshard).
			r.book.NoteMisfire(r.config().book, 0, fires[1])
			ms := func(t time.Time) int64 { return t.UnixMilli() }
			rec := stored.Completed{Server: "other", Fire: ms(fires[2]), Kind: string(KindFire),
				Ran: [][2]int64{{ms(fires[0]), ms(fires[0])}, {ms(fires[2]), ms(fires[2])}}}
			if _, err := r.rc.Set(ctx, r.paths.ItemNode(0, layout.Completed), rec.Marshal(), -1); err != nil {
				t.Fatal(err)
			}
			elsewhere := ranRecord{kind: KindFire, fire: fires[2], through: fires[2]}

			// This instance's fire of the third is held up in
			// coordination, and the fourth's waits for it; meanwhile the
			// mark goes, and the debt is paid (runOwed).
			heldUp, waiting := r.active().firer.Order.Enter(), r.active().firer.Order.Enter()
			var wg sync.WaitGroup
			wg.Go(func() { r.fireInTurn(fires[3], time.Time{}, waiting) })
			awaitCond(t, "the fourth fire waits for the fire order", func() bool { return waitsFor(r, heldUp) })
			wg.Go(r.active().firer.PayOwed)
			inTurn := false
			awaitCond(t, "the debt has run, or waits for the fires before", func() bool {
				for _, run := range ran() {
					if run.fire.Equal(fires[1]) && !r.book.IsRunning(0) {
						return true
					}
				}
				waiting, _ := r.active().firer.Order.Waiting()
				inTurn = len(waiting) == 3
				return inTurn
			})
			if !inTurn {
				t.Errorf("the debt was reserved and run ahead of the fires dispatched before it; runs:%s", describeRuns(ran()))
			}
			r.fireInTurn(fires[2], time.Time{}, heldUp)
			wg.Wait()
			r.fireScheduled(fires[4], time.Time{})
			if !r.book.WaitIdle(ctx) {
				t.Fatal("the runs did not end")
			}
			checkOnce(t, fires, append(ran(), elsewhere))
		})
	}
}
