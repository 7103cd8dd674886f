package admin_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// hostileCalendars are 50 yearly jobs of each kind issue 39 met: a calendar
// that excludes every weekday (which Validate now refuses: the job shows its
// config error), and one that fires rarely with a limit counted from start.
var hostileCalendars = map[string]string{
	"allweekdays": "cron: '0 0 0 1 1 *'\nexclude: mon,tue,wed,thu,fri,sat,sun\n",
	"rarelimit":   "cron: '0 0 0 1 1 *'\nexclude: sat,sun,mon,tue,wed,thu\nstart: 2026-01-01T00:00:00Z\nlimit: 100000\n",
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkJobsHostileCalendars measures the CPU of one Admin.Jobs (GET
// /jobs) over 50 jobs of each kind: cold, with a new Admin each time (the
// first poll), and warm (the console's next polls).
//
//	go test -run '^$' -bench BenchmarkJobsHostileCalendars -benchtime 3x ./internal/admin/
func BenchmarkJobsHostileCalendars(b *testing.B) {
	for kind, calendar := range hostileCalendars {
		for _, warm := range []bool{false, true} {
			name := kind + "/cold"
			if warm {
				name = kind + "/warm"
			}
			b.Run(name, func(b *testing.B) {
				f := newFixture(b)
				for i := range 50 {
					job := fmt.Sprintf("%s%02d", kind, i)
					if _, err := f.rc.Create(f.ctx, layout.Job(job).Config(), []byte(fmt.Sprintf("name: %s\nshardingTotalCount: 1\n%s", job, calendar)), regcenter.Persistent); err != nil {
						b.Fatal(err)
					}
				}
				adm := admin.New(f.rc, codec)
				if warm {
					if _, err := adm.Jobs(f.ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				cpu := cpuTime()
				for range b.N {
					if !warm {
						adm = admin.New(f.rc, codec)
					}
					if _, err := adm.Jobs(f.ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			})
		}
	}
}
