package mix

import (
	"slices"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/job"
)

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := Generate(7, 2000, 1), Generate(7, 2000, 1)
	if !slices.Equal(a, b) {
		t.Fatal("two draws of one seed differ")
	}
	if c := Generate(8, 2000, 1); slices.Equal(a, c) {
		t.Fatal("two seeds draw the same jobs")
	}
}

func TestGenerateMix(t *testing.T) {
	const n = 100_000
	jobs := Generate(1, n, 1)
	var count [3]int
	names := map[string]bool{}
	for _, j := range jobs {
		count[j.Class]++
		if j.Items < 1 || j.Items > MaxItems {
			t.Fatalf("%s has %d items", j.Name, j.Items)
		}
		if names[j.Name] {
			t.Fatalf("%s drawn twice", j.Name)
		}
		names[j.Name] = true
		if _, _, err := (job.Config{Name: j.Name, Cron: j.Cron, ShardingTotalCount: j.Items}).Schedule(); err != nil {
			t.Fatalf("%s: cron %q: %v", j.Name, j.Cron, err)
		}
		if (j.Class == Second) != (j.Cron == "* * * * * *") {
			t.Fatalf("%s: class %v, cron %q", j.Name, j.Class, j.Cron)
		}
		if j.Class == Daily && len(strings.Fields(j.Cron)) != 6 {
			t.Fatalf("%s: cron %q", j.Name, j.Cron)
		}
	}
	if count[Second] != 1000 {
		t.Errorf("%d jobs every second, want 1,000 (1 %%)", count[Second])
	}
	if h := float64(count[Hourly]) / float64(n-count[Second]); h < 0.68 || h > 0.72 {
		t.Errorf("hourly share %.3f, want about %.2f", h, HourlyShare)
	}
	mean := float64(Units(jobs)) / n
	if mean < 19 || mean > 24 {
		t.Errorf("mean items %.1f, want about 21 (log-uniform over 1..100)", mean)
	}
	small := 0
	for _, j := range jobs {
		if j.Items < 10 {
			small++
		}
	}
	if s := float64(small) / n; s < 0.47 || s > 0.52 {
		t.Errorf("share of jobs with fewer than 10 items %.3f, want about 0.5", s)
	}
}

func TestFastCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		pct  float64
		want int
	}{
		{100_000, 1, 1000}, {200, 1, 2}, {10, 1, 1}, {10, 0, 0}, {0, 1, 0}, {3, 100, 3}, {3, 500, 3},
	} {
		if got := FastCount(c.n, c.pct); got != c.want {
			t.Errorf("FastCount(%d, %v) = %d, want %d", c.n, c.pct, got, c.want)
		}
	}
}
