package job_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

func mustSchedule(t *testing.T, c job.Config) interface{ Next(time.Time) time.Time } {
	t.Helper()
	if c.Name == "" {
		c.Name = "cal"
	}
	if c.ShardingTotalCount == 0 {
		c.ShardingTotalCount = 1
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, _, err := c.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func firesBetween(s interface{ Next(time.Time) time.Time }, from, to time.Time) []time.Time {
	var out []time.Time
	for n := s.Next(from); !n.IsZero() && !n.After(to) && len(out) < 10000; n = s.Next(n) {
		out = append(out, n)
	}
	return out
}

var t0 = time.Date(2026, 12, 21, 10, 0, 0, 0, time.UTC) // a Monday

func TestCalendarWindow(t *testing.T) {
	s := mustSchedule(t, job.Config{Cron: "* * * * * *", TimeZone: "UTC", Start: t0.Add(10 * time.Second), End: t0.Add(20 * time.Second)})
	got := firesBetween(s, t0, t0.Add(time.Minute))
	if len(got) != 11 || !got[0].Equal(t0.Add(10*time.Second)) || !got[10].Equal(t0.Add(20*time.Second)) {
		t.Fatalf("fires in [start, end]: %d, %v .. %v", len(got), got[0], got[len(got)-1])
	}
	if n := s.Next(t0.Add(20 * time.Second)); !n.IsZero() {
		t.Fatalf("a fire after end: %v", n)
	}
}

func TestCalendarExcludesDaysInTheJobsZone(t *testing.T) {
	// Noon every day; Friday the 25th (a date), the weekend (weekdays).
	s := mustSchedule(t, job.Config{Cron: "0 0 12 * * *", TimeZone: "UTC", Exclude: "sat, Sunday,2026-12-25"})
	from := time.Date(2026, 12, 24, 13, 0, 0, 0, time.UTC)
	if n := s.Next(from); !n.Equal(time.Date(2026, 12, 28, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("next after Thursday noon: %v, want Monday the 28th", n)
	}
	// The day is the job's: in Asia/Shanghai, 23:30 UTC on the 24th is
	// already the 25th.
	sh := mustSchedule(t, job.Config{Cron: "0 30 7 * * *", TimeZone: "Asia/Shanghai", Exclude: "2026-12-25"})
	n := sh.Next(time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC))
	loc, _ := time.LoadLocation("Asia/Shanghai")
	if want := time.Date(2026, 12, 26, 7, 30, 0, 0, loc); !n.Equal(want) {
		t.Fatalf("next: %v, want %v", n, want)
	}
	// An excluded day is skipped whole, not fire by fire: a job every
	// second finds the next day at once.
	ev := mustSchedule(t, job.Config{Cron: "* * * * * *", TimeZone: "UTC", Exclude: "2026-12-25"})
	if n := ev.Next(time.Date(2026, 12, 24, 23, 59, 59, 0, time.UTC)); !n.Equal(time.Date(2026, 12, 26, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("every second: %v", n)
	}
}

func TestCalendarLimitCountsFromStart(t *testing.T) {
	s := mustSchedule(t, job.Config{Cron: "*/10 * * * * *", TimeZone: "UTC", Start: t0, Limit: 3})
	got := firesBetween(s, t0.Add(-time.Hour), t0.Add(time.Hour))
	want := []time.Time{t0, t0.Add(10 * time.Second), t0.Add(20 * time.Second)}
	if len(got) != 3 || !got[0].Equal(want[0]) || !got[2].Equal(want[2]) {
		t.Fatalf("fires with limit 3: %v", got)
	}
	// Excluded days do not count against the limit.
	x := mustSchedule(t, job.Config{Cron: "0 0 9 * * *", TimeZone: "UTC", Start: t0.Add(-2 * time.Hour), Limit: 2, Exclude: "tue"})
	got = firesBetween(x, t0.Add(-24*time.Hour), t0.Add(7*24*time.Hour))
	if len(got) != 2 || got[1].Weekday() != time.Wednesday {
		t.Fatalf("limit 2 skipping Tuesdays: %v", got)
	}
}

func TestCalendarPausedUntil(t *testing.T) {
	s := mustSchedule(t, job.Config{Cron: "* * * * * *", TimeZone: "UTC", PausedUntil: t0.Add(time.Hour), PauseNote: "upstream migration"})
	if n := s.Next(t0); !n.Equal(t0.Add(time.Hour)) {
		t.Fatalf("next while paused: %v", n)
	}
}

func TestCalendarJitterIsTheSameEverywhereAndKeepsOrder(t *testing.T) {
	cfg := job.Config{Name: "report", Cron: "*/10 * * * * *", TimeZone: "UTC", Jitter: 3 * time.Second}
	a, b := mustSchedule(t, cfg), mustSchedule(t, cfg)
	from, to := t0.Add(-time.Millisecond), t0.Add(595*time.Second)
	fa, fb := firesBetween(a, from, to), firesBetween(b, from, to)
	if len(fa) != 60 || len(fb) != 60 {
		t.Fatalf("fires in 10 minutes: %d and %d", len(fa), len(fb))
	}
	delayed := 0
	for i, f := range fa {
		nominal := t0.Add(time.Duration(i) * 10 * time.Second)
		if !f.Equal(fb[i]) {
			t.Fatalf("fire %d: %v on one instance, %v on another", i, f, fb[i])
		}
		if d := f.Sub(nominal); d < 0 || d >= 3*time.Second || d%time.Millisecond != 0 {
			t.Fatalf("fire %d delayed %v from %v", i, d, nominal)
		}
		if f.After(nominal) {
			delayed++
		}
		if i > 0 && !f.After(fa[i-1]) {
			t.Fatalf("fires out of order: %v then %v", fa[i-1], f)
		}
		// Next from just before a fire finds it.
		if n := a.Next(f.Add(-time.Millisecond)); !n.Equal(f) {
			t.Fatalf("Next(%v) = %v, want %v", f.Add(-time.Millisecond), n, f)
		}
	}
	if delayed < 50 {
		t.Fatalf("only %d of 60 fires delayed", delayed)
	}
	other := mustSchedule(t, job.Config{Name: "other", Cron: "*/10 * * * * *", TimeZone: "UTC", Jitter: 3 * time.Second})
	if fo := firesBetween(other, from, to); fo[0].Equal(fa[0]) && fo[1].Equal(fa[1]) && fo[2].Equal(fa[2]) {
		t.Fatalf("two jobs on one cron got the same delays: %v", fo[:3])
	}
	// A jitter longer than the period is kept under half of it.
	long := mustSchedule(t, job.Config{Name: "report", Cron: "*/10 * * * * *", TimeZone: "UTC", Jitter: time.Hour})
	for i, f := range firesBetween(long, from, t0.Add(55*time.Second)) {
		if d := f.Sub(t0.Add(time.Duration(i) * 10 * time.Second)); d < 0 || d >= 5*time.Second {
			t.Fatalf("fire %d delayed %v with a period of 10s", i, d)
		}
	}
}

func TestCalendarConfigErrors(t *testing.T) {
	base := job.Config{Name: "cal", Cron: "* * * * * *", ShardingTotalCount: 1}
	for _, tc := range []struct {
		name string
		mod  func(*job.Config)
		want string
	}{
		{"end before start", func(c *job.Config) { c.Start, c.End = t0, t0.Add(-time.Second) }, "is before start"},
		{"limit without start", func(c *job.Config) { c.Limit = 3 }, "set start too"},
		{"limit too large", func(c *job.Config) { c.Start, c.Limit = t0, job.MaxLimit+1 }, "at most 100000"},
		{"negative limit", func(c *job.Config) { c.Limit = -1 }, "must not be negative"},
		{"bad weekday", func(c *job.Config) { c.Exclude = "sat,funday" }, `"funday" is neither a weekday`},
		{"bad date", func(c *job.Config) { c.Exclude = "2026-13-01" }, "neither a weekday"},
		{"empty entry", func(c *job.Config) { c.Exclude = "sat,,sun" }, "entry 2 is empty"},
		{"negative jitter", func(c *job.Config) { c.Jitter = -time.Second }, "jitter -1s: must not be negative"},
		{"short deadline", func(c *job.Config) { c.StartingDeadline = 500 * time.Millisecond }, "startingDeadline 500ms"},
		{"note without pause", func(c *job.Config) { c.PauseNote = "why" }, "set pausedUntil too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mod(&c)
			err := c.Validate()
			if !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestCalendarDocumentRoundTrip(t *testing.T) {
	loc, _ := time.LoadLocation("Asia/Shanghai")
	// The times without an offset are read in the job's zone, which comes
	// after them in the document.
	doc := `name: cal
cron: "0 0 9 * * *"
start: "2026-12-01T08:00:00"
end: 2027-01-31
pausedUntil: "2026-12-05T00:00:00Z"
pauseNote: waiting for the new warehouse
limit: 20
exclude: [sat, sun, "2026-12-25"]
jitter: 90s
startingDeadline: 10m
timeZone: Asia/Shanghai
shardingTotalCount: 2
`
	c, err := job.DecodeConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Start.Equal(time.Date(2026, 12, 1, 8, 0, 0, 0, loc)) || !c.End.Equal(time.Date(2027, 1, 31, 0, 0, 0, 0, loc)) {
		t.Fatalf("start %v end %v", c.Start, c.End)
	}
	if c.Exclude != "sat,sun,2026-12-25" || c.Jitter != 90*time.Second || c.StartingDeadline != 10*time.Minute || c.Limit != 20 || c.PauseNote == "" {
		t.Fatalf("decoded %+v", c)
	}
	enc, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := job.DecodeConfig(enc)
	if err != nil {
		t.Fatalf("%v\n%s", err, enc)
	}
	if !back.Start.Equal(c.Start) || !back.End.Equal(c.End) || !back.PausedUntil.Equal(c.PausedUntil) ||
		back.Exclude != c.Exclude || back.Jitter != c.Jitter || back.StartingDeadline != c.StartingDeadline || back.Limit != c.Limit || back.PauseNote != c.PauseNote {
		t.Fatalf("round trip:\n%+v\n%+v", c, back)
	}
	// A config without a calendar writes none of its keys.
	plain, _ := job.Config{Name: "p", Cron: "* * * * * *", ShardingTotalCount: 1}.Encode()
	for _, k := range []string{"start", "end", "limit", "exclude", "jitter", "startingDeadline", "pausedUntil", "pauseNote"} {
		if strings.Contains(string(plain), "\n"+k+":") {
			t.Fatalf("plain config writes %s:\n%s", k, plain)
		}
	}
	for _, bad := range []string{
		"name: x\ncron: '* * * * * *'\nshardingTotalCount: 1\nstart: tomorrow\n",
		"name: x\ncron: '* * * * * *'\nshardingTotalCount: 1\nexclude: [sat, [sun]]\n",
		"name: x\ncron: '* * * * * *'\nshardingTotalCount: 1\nexclude: ['sat,sun']\n",
	} {
		if _, err := job.DecodeConfig([]byte(bad)); !errors.Is(err, job.ErrInvalidConfig) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

// A make-up run runs only the fires within the job's starting deadline:
// an item busy for 4 s owes the fires it missed, and the run after it
// starts at a fire no older than the deadline; the older ones are counted
// as expired and reported.
func TestStartingDeadlineDropsOldFires(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	var mu sync.Mutex
	var long time.Time
	rec.holdFor = func(sc job.ShardingContext) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if sc.Kind == job.KindFire && long.IsZero() {
			long = sc.FireTime
			return 4 * time.Second
		}
		return 0
	}
	cfg := everySecond("deadline", 1)
	cfg.StartingDeadline = time.Second
	events := make(chan job.Event, 64)
	in := startInstance(t, ns, "s1", cfg, rec, eventsTo(events))
	ev := waitEvent(t, events, job.EventFiresExpired, 30*time.Second)
	if ev.Job != "deadline" || ev.Units < 1 {
		t.Fatalf("event %+v", ev)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, r := range rec.snapshot() {
			if r.kind != job.KindMisfire {
				continue
			}
			// The first fire the busy run made the item miss is long+1s;
			// the make-up run starts within a second of its start.
			mu.Lock()
			long := long
			mu.Unlock()
			if !r.fire.After(long.Add(time.Second)) || r.begin.Sub(r.fire) > time.Second+500*time.Millisecond {
				t.Fatalf("make-up run from %v (begun %v) after a run of %v: fires older than the deadline ran", r.fire, r.begin, long)
			}
			st := in.sched.Stats()
			if len(st.Jobs) != 1 || st.Jobs[0].FiresExpired < 1 {
				t.Fatalf("stats %+v", st.Jobs)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no make-up run after the busy run")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
