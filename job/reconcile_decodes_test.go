package job

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// TestReconcileRoundDecodesTheTableOnce: a reconcile round on the leader
// of J jobs repairs each job's entry in the load table; the books being
// right, the round decodes the table a constant number of times, not once
// per job (which made the leader's round O(J²)). Counted, not timed, at
// two sizes.
func TestReconcileRoundDecodesTheTableOnce(t *testing.T) {
	zc := zktest.Start(t)
	for _, jobs := range []int{8, 32} {
		t.Run(fmt.Sprint(jobs), func(t *testing.T) {
			rc := connectOne(t, regcenter.Config{Servers: zc.Servers(), Namespace: fmt.Sprintf("decodes%d", jobs)})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s, err := NewScheduler(rc, WithServerID("one"), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			noop := SimpleFunc(func(context.Context, ShardingContext) error { return nil })
			var names []string
			for i := range jobs {
				cfg := Config{Name: fmt.Sprintf("j%02d", i), Cron: "* * * * * ?", ShardingTotalCount: 2}
				if err := s.Add(ctx, cfg, noop); err != nil {
					t.Fatal(err)
				}
				names = append(names, cfg.Name)
			}
			if err := s.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := s.Shutdown(context.Background()); err != nil {
					t.Errorf("shutdown: %v", err)
				}
			})
			// Every job led here and placed: the table has its entry.
			for {
				data, _, err := rc.Get(ctx, layout.Placement)
				placed := 0
				if err == nil {
					if tb, err := placement.DecodeTable(data); err == nil {
						placed = tb.Units()["one"]
					}
				}
				leading := 0
				for _, n := range names {
					if r := s.runner(n); r.leading() && r.prep.Done() {
						leading++
					}
				}
				if placed == 2*jobs && leading == jobs {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("%d of %d units placed, %d of %d jobs led", placed, 2*jobs, leading, jobs)
				case <-time.After(20 * time.Millisecond):
				}
			}
			// The instance decodes the table on each write of it too (its
			// check of the units it holds, on the write's watch event): a
			// round counts only when no write came since the round before
			// it began (a write's event lands well within a round), or the
			// check of a write by the jobs' reshards would count as the
			// round's. The rounds themselves, the books being right, write
			// nothing.
			version := func() int32 {
				_, st, err := rc.Get(ctx, layout.Placement)
				if err != nil {
					t.Fatal(err)
				}
				return st.Version
			}
			quiet, prev := 0, version()
			for round := 0; quiet < 2; round++ {
				if round == 8 {
					t.Fatalf("%d of %d rounds over %d jobs counted: the table was written in the others (by the rounds, or something keeps writing it)", quiet, round, jobs)
				}
				v := version()
				before := placement.Decodes()
				for _, n := range names {
					s.runner(n).reconcileRound(nil).Run()
				}
				n := placement.Decodes() - before
				writes := version() - prev
				prev = v
				if round == 0 || writes != 0 {
					t.Logf("round %d over %d jobs: %d decodes, not counted (the first, or %d writes of the table since the round before began)", round, jobs, n, writes)
					continue
				}
				quiet++
				t.Logf("round %d over %d jobs: %d decodes of the load table", round, jobs, n)
				if n > 2 {
					t.Errorf("round %d over %d jobs decoded the load table %d times, want at most 2", round, jobs, n)
				}
			}
		})
	}
}
