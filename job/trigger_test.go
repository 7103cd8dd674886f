package job

import (
	"context"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter/zktest"
)

// An unmonitored job's fires on a watched assumption send nothing, so
// once its watches are armed they are dispatched at their time; a fire
// that has to read again (the assumption dropped) gets the lead back.
func TestUnmonitoredSteadyFiresGetNoLead(t *testing.T) {
	const lead = 400 * time.Millisecond
	cfg := Config{Name: "quick", Cron: "* * * * * *", ShardingTotalCount: 1, Unmonitored: true}
	s, r, _ := startOneJob(t, zktest.Start(t), "quicklead", cfg, WithFireLead(lead))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leadOfNext := func() time.Duration { return s.trig.Lead("quick") }
	for !(r.quickFire() && leadOfNext() == 0) {
		if ctx.Err() != nil {
			t.Fatalf("the steady unmonitored job's fires are still dispatched %v ahead", leadOfNext())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Right after a fire, so that the next one is not dispatched (and
	// assumes again) before the checks below.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
	r.active().assigned.Forget()
	if r.quickFire() {
		t.Fatal("a job without an assumption is still quick")
	}
	if got := leadOfNext(); got != lead {
		t.Fatalf("the next fire of a job that must read is dispatched %v ahead, want %v", got, lead)
	}
}
