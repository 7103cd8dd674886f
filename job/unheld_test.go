package job_test

import (
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/job/internal/stored"
)

// TestAFireOfAnItemWhoseMarkWentProvesItsRecord: an item held here since
// the previous fire, whose mark went meanwhile (a completion found the
// assumption gone: here the test moves the reshard epoch during a run), was
// free for another instance to run — as one did under load, making up a
// debt it kept after a reshard moved the item away, for every fire due by
// then. The owner, behind in its fires, must not run such a fire again:
// its marking proves the record it knows, finds it changed, and the fire
// becomes a make-up run the record settles. The instance's clock is two
// seconds behind, so that its fire F+4 comes after the other run is
// recorded; the fire after it runs as usual.
func TestAFireOfAnItemWhoseMarkWentProvesItsRecord(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	started := make(chan time.Time, 16)
	rec.holdFor = func(sc job.ShardingContext) time.Duration {
		select {
		case started <- sc.FireTime:
		default:
		}
		return 300 * time.Millisecond
	}
	const period = 4 * time.Second
	cfg := job.Config{Name: "unheld", Cron: "*/4 * * * * *", ShardingTotalCount: 1}
	startInstance(t, ns, "a", cfg, rec, job.WithClockForTest(func() time.Time { return time.Now().Add(-2 * time.Second) }))
	obs := observer(t, ns)
	ctx := tctx(t)
	paths := layout.Job("unheld")

	// A run of fire F: the epoch moves under it, so its completion finds
	// the assumption gone and lets the mark go.
	var fireF time.Time
	select {
	case fireF = <-started:
	case <-time.After(waitSlack * 30 * time.Second):
		t.Fatal("no run began")
	}
	if _, err := obs.Set(ctx, paths.ShardingEpoch(), nil, -1); err != nil {
		t.Fatal(err)
	}
	running := paths.ItemNode(0, layout.Running)
	waitUntil(t, 20*time.Second, func() bool {
		ok, _, err := obs.Exists(ctx, running)
		return err == nil && !ok
	})

	// Another instance ran fire F+4 meanwhile, and recorded it.
	next := fireF.Add(period)
	data, st, err := obs.Get(ctx, paths.ItemNode(0, layout.Completed))
	if err != nil {
		t.Fatalf("item 0's record after fire %s: %v", fireF.Format("15:04:05"), err)
	}
	c, err := stored.DecodeCompleted(data)
	if err != nil {
		t.Fatal(err)
	}
	if c.Fire != fireF.UnixMilli() {
		t.Fatalf("item 0's record lists fire %s as the latest; want %s", time.UnixMilli(c.Fire).Format("15:04:05"), fireF.Format("15:04:05"))
	}
	c.Server, c.Kind, c.Fire, c.Since = "elsewhere", "misfire", next.UnixMilli(), next.UnixMilli()
	c.Ran = append(c.Ran, [2]int64{next.UnixMilli(), next.UnixMilli()})
	if _, err := obs.Set(ctx, paths.ItemNode(0, layout.Completed), c.Marshal(), st.Version); err != nil {
		t.Fatal(err)
	}

	// The fire after F+4 runs here; F+4 does not run again.
	after := next.Add(period)
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if !r.through.Before(after) {
				return true
			}
		}
		return false
	})
	for _, r := range rec.snapshot() {
		if !r.fire.After(next) && !r.through.Before(next) {
			t.Fatalf("fire %s, recorded as run elsewhere, ran again here: %s run of fire %s through %s",
				next.Format("15:04:05"), r.kind, r.fire.Format("15:04:05"), r.through.Format("15:04:05"))
		}
	}
}
