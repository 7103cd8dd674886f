package job

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/fireplan"
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
		t.Run(registry, func(t *testing.T) {
			rcfg := regcenter.Config{Namespace: "collapsed", SessionTimeout: 4 * time.Second}
			if registry == "etcd" {
				rcfg.Etcd = etcdtest.Start(t).Endpoints()
			} else {
				rcfg.Servers = zktest.Start(t).Servers()
			}
			heldUpFireIsMadeUp(t, rcfg)
		})
	}
}

// ranRecord is one run of the test's job: the fires it stood for.
type ranRecord struct {
	kind          Kind
	fire, through time.Time
}

func heldUpFireIsMadeUp(t *testing.T, rcfg regcenter.Config) {
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
	// Fires on the first of every month: the scheduler's own trigger fires
	// none while the test runs, and the test's fires, the latest five
	// come, are run at once.
	cfg := Config{Name: "held", Cron: "0 0 0 1 * *", TimeZone: "UTC", ShardingTotalCount: 1}
	_, r := runOneJob(t, rc, cfg, record)
	if err := r.prepareSync(); err != nil {
		t.Fatal(err)
	}
	sched, _, err := r.config().Schedule()
	if err != nil {
		t.Fatal(err)
	}
	fires := make([]time.Time, 5)
	for i, at := len(fires)-1, time.Now(); i >= 0; i-- {
		fires[i] = fireplan.Prev(sched, at)
		at = fires[i].Add(-time.Millisecond)
	}
	// The last, the latest fire come, is one a make-up run reserved now
	// stands for.
	first, heldUp, collapsed, later := fires[0], fires[1], fires[2], fires[3]

	r.fireScheduled(first, time.Time{}) // the item is this instance's, and its mark held
	// The later fire, into which the trigger collapsed the one before it,
	// notes that one as missed (fireScheduled's first step) and waits for
	// the fire order, which the held-up fire takes first.
	r.book.NoteSuspendedMiss(collapsed)
	r.fireScheduled(heldUp, time.Time{})
	r.fireScheduled(later, time.Time{})
	if !r.book.WaitIdle(ctx) {
		t.Fatal("the runs did not end")
	}

	mu.Lock()
	defer mu.Unlock()
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

// describeRuns lists runs, by the dates of the fires they stood for.
func describeRuns(runs []ranRecord) string {
	s := ""
	for _, r := range runs {
		s += fmt.Sprintf(" %s[%s..%s]", r.kind, r.fire.Format(time.DateOnly), r.through.Format(time.DateOnly))
	}
	return s
}
