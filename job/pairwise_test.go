package job_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

// The pairwise live test of schedule options (docs/design.md, "Overlap,
// deadlines, calendars and daylight saving time"): every
// pair of two options' values runs as a job of its own, all of them at
// once on one cluster of three instances, and each job's runs are checked
// against the rules of its options.

// pairItems is the number of items of every job of the pairwise test.
const pairItems = 2

// pairBusy is how long a run of a job with an overlap policy takes: longer
// than its one-second period, so that fires find the item busy.
const pairBusy = 1500 * time.Millisecond

// pairShort is how long every other run takes.
const pairShort = 20 * time.Millisecond

// pairJitter is the jitter of the jobs with jitter: under half the period,
// so that a fire's time before jitter is its time cut to the second.
const pairJitter = 300 * time.Millisecond

// pairLimit is the number of fires of a job with a limit.
const pairLimit = 4

// pairRetry is the retry policy of the jobs with retries: a wait far
// under the one-second period, so that most retries start before the
// next fire.
var pairRetry = job.RetryPolicy{Attempts: 2, Backoff: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}

// pairFails reports whether a run of a job with retries fails on purpose,
// at once: the first attempt of the fires of even seconds.
func pairFails(sc job.ShardingContext) bool {
	return sc.Attempt == 1 && nominal(sc.FireTime).Unix()%2 == 0
}

// errPairFails is the failure of a run pairFails chooses.
var errPairFails = errors.New("the first attempt fails on purpose")

// pairPlan is a job of the pairwise test being built: its config, how
// long its runs take, and whether it runs after a parent of its own.
type pairPlan struct {
	cfg   job.Config
	hold  time.Duration
	after bool
	keyed bool // its items come from data (job.ItemLister): pairKey's
}

// pairKey is item's key in the list of a job whose items come from data.
func pairKey(item int) string { return fmt.Sprintf("key-%d", item) }

// pairKeyed is a job of the pairwise test whose items come from data:
// the list names every item (pairKey), so its runs are those of the same
// job with numbered items.
type pairKeyed struct{ job.Job }

func (pairKeyed) ListItems(context.Context) ([]string, error) {
	keys := make([]string, pairItems)
	for i := range keys {
		keys[i] = pairKey(i)
	}
	return keys, nil
}

// errPairKey is the failure of a run of a keyed job given another key
// than its item's.
var errPairKey = errors.New("the run's key is not its item's")

// pairValue is one value of a schedule option, other than its default.
type pairValue struct {
	name  string
	apply func(p *pairPlan)
}

// pairOption is a schedule option and its values under test.
type pairOption struct {
	name   string
	values []pairValue
}

// pairOptions lists the schedule options and their values: a new option,
// or a new value, is added here, and the pairs follow. calStart anchors
// the calendars: the limit counts from it, the pause ends pairLimit/2
// fires after it. The rules the runs are checked against are read from
// each job's config (pairRules), not from these names.
func pairOptions(calStart time.Time) []pairOption {
	overlap := func(p job.OverlapPolicy) pairValue {
		return pairValue{string(p), func(pl *pairPlan) {
			pl.cfg.Overlap, pl.hold = p, pairBusy
			if p == job.OverlapAllow {
				pl.cfg.Unmonitored = true // allow needs it
			}
		}}
	}
	today := time.Now().UTC()
	return []pairOption{
		{"overlap", []pairValue{overlap(job.OverlapBufferOne), overlap(job.OverlapSkip), overlap(job.OverlapReplace), overlap(job.OverlapAllow)}},
		{"jitter", []pairValue{{"jitter", func(pl *pairPlan) { pl.cfg.Jitter = pairJitter }}}},
		{"after", []pairValue{{"after", func(pl *pairPlan) { pl.after = true }}}},
		{"limit", []pairValue{{"limit", func(pl *pairPlan) { pl.cfg.Start, pl.cfg.Limit = calStart, pairLimit }}}},
		// Today and tomorrow (the test may cross midnight): every fire
		// of the test is on an excluded day.
		{"exclude", []pairValue{{"exclude", func(pl *pairPlan) {
			pl.cfg.Exclude = today.Format(time.DateOnly) + "," + today.AddDate(0, 0, 1).Format(time.DateOnly)
		}}}},
		{"paused", []pairValue{{"paused", func(pl *pairPlan) { pl.cfg.PausedUntil = calStart.Add(pairLimit / 2 * time.Second) }}}},
		{"deadline", []pairValue{{"deadline", func(pl *pairPlan) { pl.cfg.StartingDeadline = job.MinInterval }}}},
		{"failover", []pairValue{{"failover", func(pl *pairPlan) { pl.cfg.Failover = true }}}},
		{"unmonitored", []pairValue{{"unmonitored", func(pl *pairPlan) { pl.cfg.Unmonitored = true }}}},
		// The first attempt of every other fire fails at once (pairFails):
		// each attempt is a run of the same fire.
		{"retry", []pairValue{{"retry", func(pl *pairPlan) { pl.cfg.Retry = pairRetry }}}},
		// Late fires are raised while the runs go on: nothing a run does
		// may change for it.
		{"alert", []pairValue{{"alert", func(pl *pairPlan) { pl.cfg.Alert = job.AlertPolicy{Late: job.MinInterval, NotRunFor: time.Minute} }}}},
		// Items from data: a run with another key than its item's fails.
		{"items", []pairValue{{"items", func(pl *pairPlan) { pl.keyed = true }}}},
	}
}

// pairJobs returns the jobs of the pairwise test: one per pair of values
// of two options (all pairs: a covering array of strength two whose rows
// each cover one pair, so that a failing job names its pair), each with
// its parent when it runs after one, and the pairs no valid config has,
// with the reason.
func pairJobs(opts []pairOption) (jobs []pairPlan, invalid []string) {
	for a := range opts {
		for b := a + 1; b < len(opts); b++ {
			for _, va := range opts[a].values {
				for _, vb := range opts[b].values {
					p := pairPlan{cfg: job.Config{Name: "pw-" + va.name + "-" + vb.name, Cron: "* * * * * *",
						TimeZone: "UTC", ShardingTotalCount: pairItems}, hold: pairShort}
					va.apply(&p)
					vb.apply(&p)
					if p.after {
						p.cfg.After = p.cfg.Name + ".parent"
					}
					if err := p.cfg.Validate(); err != nil {
						invalid = append(invalid, fmt.Sprintf("%s × %s: %v", va.name, vb.name, err))
						continue
					}
					if p.after {
						// The parent: on the same schedule (calendar and
						// jitter too), short runs, no other option.
						parent := pairPlan{cfg: job.Config{Name: p.cfg.After, Cron: p.cfg.Cron, TimeZone: p.cfg.TimeZone,
							ShardingTotalCount: pairItems, Start: p.cfg.Start, Limit: p.cfg.Limit, Exclude: p.cfg.Exclude,
							PausedUntil: p.cfg.PausedUntil, Jitter: p.cfg.Jitter}, hold: pairShort}
						jobs = append(jobs, parent)
					}
					jobs = append(jobs, p)
				}
			}
		}
	}
	return jobs, invalid
}

// pairRun is one execution of an item seen by a job of the pairwise test,
// whatever its outcome.
type pairRun struct {
	server  string
	item    int
	kind    job.Kind
	fire    time.Time
	through time.Time
	begin   time.Time
	end     time.Time
	err     error // nil: it ran to its end and still owned the item
	attempt int   // ShardingContext.Attempt
}

// ok reports whether the run completed its work.
func (r pairRun) ok() bool { return r.err == nil }

func (r pairRun) String() string {
	s := fmt.Sprintf("%s item %d %s fire %s", r.server, r.item, r.kind, r.fire.Format("15:04:05.000"))
	if r.through.After(r.fire) {
		s += " through " + r.through.Format("15:04:05.000")
	}
	s += fmt.Sprintf(" ran %s-%s", r.begin.Format("15:04:05.000"), r.end.Format("15:04:05.000"))
	if r.attempt > 1 {
		s += fmt.Sprintf(" attempt %d", r.attempt)
	}
	if r.err != nil {
		s += " (" + r.err.Error() + ")"
	}
	return s
}

// pairRecorder collects every job's runs, from every instance.
type pairRecorder struct {
	mu   sync.Mutex
	runs map[string][]pairRun
	// retrying are the jobs with retries, whose runs pairFails may fail.
	retrying map[string]bool
	// keyed are the jobs whose items come from data.
	keyed map[string]bool
}

func (pr *pairRecorder) job(server string, hold time.Duration, keyed bool) job.Job {
	j := job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		r := pairRun{server: server, item: sc.Item, kind: sc.Kind, fire: sc.FireTime, through: sc.Through, begin: time.Now(), attempt: sc.Attempt}
		d := hold
		if pr.retrying[sc.JobName] && pairFails(sc) {
			d, r.err = 0, errPairFails
		}
		if pr.keyed[sc.JobName] && sc.ItemKey != pairKey(sc.Item) {
			d, r.err = 0, fmt.Errorf("%w: %q", errPairKey, sc.ItemKey)
		}
		select {
		case <-time.After(d):
			if r.err != nil {
				break
			}
			r.err = sc.StillOwner()
		case <-ctx.Done():
			r.err = context.Cause(ctx)
		}
		r.end = time.Now()
		pr.mu.Lock()
		pr.runs[sc.JobName] = append(pr.runs[sc.JobName], r)
		pr.mu.Unlock()
		return r.err
	})
	if keyed {
		return pairKeyed{j}
	}
	return j
}

// of returns the runs of job name, in the order they began.
func (pr *pairRecorder) of(name string) []pairRun {
	pr.mu.Lock()
	runs := append([]pairRun(nil), pr.runs[name]...)
	pr.mu.Unlock()
	sort.Slice(runs, func(i, j int) bool { return runs[i].begin.Before(runs[j].begin) })
	return runs
}

// nominal is a fire's time before jitter: every job fires on whole
// seconds, and a jitter is under half a second.
func nominal(t time.Time) time.Time { return t.Truncate(time.Second) }

// pairCheck is what the runs of one job are checked against: the fires
// of [from, to) its config keeps, and its parent's runs, if it has one.
type pairCheck struct {
	cfg      job.Config
	from, to time.Time
	runs     []pairRun
	parent   []pairRun // nil: no parent
}

// kept reports whether the job's calendar keeps its fire of nominal time n.
func (c pairCheck) kept(n time.Time) bool {
	if c.cfg.Limit > 0 && (n.Before(c.cfg.Start) || !n.Before(c.cfg.Start.Add(time.Duration(c.cfg.Limit)*time.Second))) {
		return false
	}
	if !c.cfg.PausedUntil.IsZero() && n.Before(c.cfg.PausedUntil) {
		return false
	}
	for _, d := range strings.Split(c.cfg.Exclude, ",") {
		if d != "" && n.UTC().Format(time.DateOnly) == d {
			return false
		}
	}
	return true
}

// stands reports whether run r stands for the fire of nominal time n:
// it ran that fire, or made it up (a misfire or failover run from
// FireTime through Through).
func stands(r pairRun, n time.Time) bool {
	f := nominal(r.fire)
	if f.Equal(n) {
		return true
	}
	return (r.kind == job.KindMisfire || r.kind == job.KindFailover) && f.Before(n) && !nominal(r.through).Before(n)
}

// covers reports whether r counts as the fire's run: a run that
// completed, or under overlap replace a run replaced by a later fire
// (its fire is not made up).
func (c pairCheck) covers(r pairRun, n time.Time) bool {
	if !stands(r, n) {
		return false
	}
	return r.ok() || (c.cfg.Overlap == job.OverlapReplace && errors.Is(r.err, job.ErrReplaced))
}

// busyAt returns the last run of item that was going at the fire of
// nominal time n (its jitter included), if one was: a fire that finds
// its item busy may be dropped (overlap skip) or owed (then made up, or
// dropped by the starting deadline). A run of an earlier fire counts
// whenever it began: its fire reserved the item, and a job's fires are
// taken in order, so a run that a loaded machine began after n was the
// item's from before n's fire came.
func (c pairCheck) busyAt(item int, n time.Time) (pairRun, bool) {
	const slack = 200 * time.Millisecond // from the mark's write to the run's start, and from its end to the record
	var busy pairRun
	found := false
	for _, r := range c.runs {
		began := !r.begin.After(n.Add(c.cfg.Jitter+slack)) || r.kind == job.KindFire && nominal(r.fire).Before(n)
		if r.item == item && !stands(r, n) && began && !r.end.Before(n.Add(-slack)) && (!found || r.begin.After(busy.begin)) {
			busy, found = r, true
		}
	}
	return busy, found
}

// problems returns what is wrong with the job's runs, or nothing.
func (c pairCheck) problems() []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	// Every fire the calendar keeps ran once on every item, or was
	// dropped by its documented rule; no fire it removes ran.
	for n := c.from; n.Before(c.to); n = n.Add(time.Second) {
		for item := range pairItems {
			var covering []pairRun
			for _, r := range c.runs {
				if r.item == item && c.covers(r, n) {
					covering = append(covering, r)
				}
			}
			switch {
			case !c.kept(n):
				if len(covering) > 0 {
					bad("fire %s item %d is not a fire (the calendar removes it), yet ran: %v", n.Format("15:04:05"), item, covering[0])
				}
			case len(covering) > 1 && !c.cfg.Unmonitored:
				bad("fire %s item %d ran %d times: %v", n.Format("15:04:05"), item, len(covering), covering)
			case len(covering) == 0:
				if why := c.dropped(item, n); why == "" {
					bad("fire %s item %d lost (the item's runs around it: %v)", n.Format("15:04:05"), item, c.around(item, n))
				}
			}
		}
	}

	// One fire, one time: the same jittered time on every item and
	// instance, within the jitter of the fire's time.
	at := map[time.Time]time.Time{}
	for _, r := range c.runs {
		n := nominal(r.fire)
		if prev, ok := at[n]; ok && !prev.Equal(r.fire) {
			bad("fire %s has two times: %s and %s", n.Format("15:04:05"), prev.Format("15:04:05.000"), r.fire.Format("15:04:05.000"))
		}
		at[n] = r.fire
		if d := r.fire.Sub(n); d >= max(c.cfg.Jitter, time.Millisecond) {
			bad("run %v: fire time %v after the schedule's, jitter %v", r, d, c.cfg.Jitter)
		}
	}

	// An item never runs on two instances at once (an unmonitored job
	// gives that up), nor twice at once on one (but under overlap allow).
	for _, o := range c.overlapping() {
		a, b := o[0], o[1]
		if a.server != b.server && !c.cfg.Unmonitored {
			bad("item %d ran on two instances at once: %v and %v", a.item, a, b)
		}
		if a.server == b.server && c.cfg.Overlap != job.OverlapAllow {
			bad("item %d ran twice at once on %s: %v and %v", a.item, a.server, a, b)
		}
	}

	// A retry runs on the server whose attempt of the same fire failed
	// before it, after it ended and its backoff passed.
	for i, r := range c.runs {
		if r.attempt <= 1 {
			continue
		}
		if c.cfg.Retry.Attempts == 0 || r.attempt > 1+c.cfg.Retry.Attempts {
			bad("run %v: attempt %d, the policy allows %d retries", r, r.attempt, c.cfg.Retry.Attempts)
			continue
		}
		prev := false
		for _, p := range c.runs[:i] {
			if p.item == r.item && p.server == r.server && p.fire.Equal(r.fire) && p.attempt == r.attempt-1 && p.err != nil &&
				!r.begin.Before(p.end.Add(c.cfg.Retry.Backoff)) {
				prev = true
			}
		}
		if !prev {
			bad("run %v: a retry without a failed attempt of its fire before it (a backoff earlier) on its server", r)
		}
	}

	// A dependent's run begins after its parent completed every fire
	// it stands for, on every item.
	if c.parent != nil {
		for _, r := range c.runs {
			if !r.ok() {
				continue
			}
			for n := nominal(r.fire); !n.After(nominal(r.through)); n = n.Add(time.Second) {
				if !c.kept(n) {
					continue
				}
				for item := range pairItems {
					done := false
					for _, p := range c.parent {
						if p.item == item && p.ok() && stands(p, n) && p.end.Before(r.begin) {
							done = true
						}
					}
					if !done {
						bad("run %v began before its parent completed fire %s on item %d", r, n.Format("15:04:05"), item)
					}
				}
			}
		}
	}
	return out
}

// dropped says by which documented rule the fire of nominal time n was
// not run on item, or "" if by none.
func (c pairCheck) dropped(item int, n time.Time) string {
	if c.cfg.Retry.Attempts > 0 {
		// Its first attempt failed on purpose, and the retry's wait
		// would have ended at or after the next fire: it yielded.
		for _, r := range c.runs {
			if r.item == item && stands(r, n) && errors.Is(r.err, errPairFails) &&
				!r.end.Add(c.cfg.Retry.Backoff).Before(nominal(r.through).Add(time.Second)) {
				return "retry: it yielded to the next fire"
			}
		}
	}
	busy, found := c.busyAt(item, n)
	if !found {
		return ""
	}
	if c.cfg.Overlap == job.OverlapSkip || c.cfg.Misfire == job.MisfireSkip {
		return "skip: it found its item busy"
	}
	if d := c.cfg.StartingDeadline; d > 0 {
		// Owed, and made up only after the deadline: the item's next run
		// began more than d after the fire.
		for _, r := range c.runs {
			if r.item == item && r.begin.After(busy.begin) {
				if r.begin.After(n.Add(d)) {
					return "startingDeadline: its make-up began too late"
				}
				return ""
			}
		}
		return "" // owed still
	}
	return ""
}

// TestClusterPairwiseScheduleOptions runs every pair of schedule options
// (pairOptions) as a job, all at once on three instances, for about ten
// fires, and checks each job's runs: every fire its calendar keeps ran
// once on every item, or was dropped by its documented rule (overlap skip
// drops fires that found the item busy, the starting deadline drops old
// make-ups); no fire the calendar removes ran; an item never ran on two
// instances at once (an unmonitored job gives that up); a dependent ran
// each fire after its parent completed it.
func TestClusterPairwiseScheduleOptions(t *testing.T) {
	ns := namespace(t)
	// The calendars' fires start after the instances have (most likely)
	// joined; the check does not depend on it.
	begun := time.Now()
	calStart := begun.Truncate(time.Second).Add(10 * time.Second)
	jobs, invalid := pairJobs(pairOptions(calStart))
	for _, s := range invalid {
		t.Logf("not a valid pair: %s", s)
	}
	t.Logf("%d jobs for the pairs of %d options", len(jobs), len(pairOptions(calStart)))

	rec := &pairRecorder{runs: map[string][]pairRun{}, retrying: map[string]bool{}, keyed: map[string]bool{}}
	for _, p := range jobs {
		rec.retrying[p.cfg.Name] = p.cfg.Retry.Attempts > 0
		rec.keyed[p.cfg.Name] = p.keyed
	}
	// The three instances start one after another, as three processes
	// would be, and stop together at the end: each leaves every job, which
	// takes a while on a registry built with -race (the etcd member of the
	// package's tests runs in the test binary). Every job is added to all
	// three before any starts: Add refuses a schedule that has ended, and
	// on a busy machine the limit jobs' fires could be used up before the
	// last instance starts.
	var ins []*instance
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, in := range ins {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				defer cancel()
				if err := in.sched.Shutdown(ctx); err != nil {
					// What is checked here is the schedules; a leave that
					// a starved registry could not answer in time is
					// Shutdown's documented answer, tested on its own
					// (shutdown_test.go).
					t.Logf("shutdown %s: %v", in.id, err)
				}
				in.rc.Close()
			}()
		}
		wg.Wait()
	})
	var added []*instance
	for _, id := range []string{"s1", "s2", "s3"} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rc, s := connect(t, ctx, ns, id)
		added = append(added, &instance{id: id, rc: rc, sched: s})
		for _, p := range jobs {
			if err := s.Add(ctx, p.cfg, rec.job(id, p.hold, p.keyed)); err != nil {
				for _, in := range added {
					in.rc.Close()
				}
				t.Fatalf("%s: add %s: %v", id, p.cfg.Name, err)
			}
		}
	}
	for i, in := range added {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := in.sched.Start(ctx); err != nil {
			for _, later := range added[i:] {
				later.rc.Close()
			}
			t.Fatalf("start %s: %v", in.id, err)
		}
		ins = append(ins, in)
	}
	t.Logf("three instances started in %v", time.Since(begun).Round(time.Millisecond))
	// The fires after the joins have settled: from the first second by
	// which every item of every job the calendar leaves alone has begun a
	// run after the three started (a dependent's item only once its parent
	// let it run).
	started := time.Now()
	unsettled := func() string {
		for _, p := range jobs {
			if p.cfg.Limit > 0 || p.cfg.Exclude != "" || !p.cfg.PausedUntil.IsZero() {
				continue
			}
			ran := map[int]bool{}
			for _, r := range rec.of(p.cfg.Name) {
				if r.begin.After(started) && !errors.Is(r.err, job.ErrParentFailed) {
					ran[r.item] = true
				}
			}
			if len(ran) < pairItems {
				return p.cfg.Name
			}
		}
		return ""
	}
	for name := unsettled(); name != ""; name = unsettled() {
		if time.Since(started) > 30*time.Second {
			t.Fatalf("%s: not every item ran within 30s of the three instances' start", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	from := time.Now().Truncate(time.Second).Add(time.Second)
	t.Logf("every item ran %v after the start; the fires from %s are checked",
		time.Since(started).Round(time.Millisecond), from.Format("15:04:05"))
	if from.After(calStart) {
		t.Logf("the calendars' first fire (%s) came before: those fires are not checked", calStart.Format("15:04:05"))
	}
	to := from.Add(10 * time.Second)
	if end := calStart.Add((pairLimit + 2) * time.Second); to.Before(end) {
		to = end
	}
	check := func() map[string][]string {
		out := map[string][]string{}
		for _, p := range jobs {
			c := pairCheck{cfg: p.cfg, from: from, to: to, runs: rec.of(p.cfg.Name)}
			if p.cfg.After != "" {
				c.parent = rec.of(p.cfg.After)
				if c.parent == nil {
					c.parent = []pairRun{}
				}
			}
			if probs := c.problems(); len(probs) > 0 {
				out[p.cfg.Name] = probs
			}
		}
		return out
	}
	// Wait for the fires of [from, to) and their make-ups: until the
	// check passes, or a bound well past to.
	var probs map[string][]string
	for deadline := to.Add(20 * time.Second); ; {
		time.Sleep(250 * time.Millisecond)
		if time.Now().Before(to.Add(pairBusy)) {
			continue
		}
		if probs = check(); len(probs) == 0 || time.Now().After(deadline) {
			break
		}
	}
	names := make([]string, 0, len(probs))
	for n := range probs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ps := probs[n]
		if len(ps) > 5 {
			ps = append(ps[:5], fmt.Sprintf("and %d more", len(ps)-5))
		}
		t.Errorf("%s:\n\t%s", n, strings.Join(ps, "\n\t"))
	}

	// The test is only as good as its jobs ran: each job with kept fires
	// in the window ran some, and each overlap policy met busy items (a
	// make-up run, a fire dropped, a run replaced, runs side by side).
	dropsBy := map[string]int{}
	for _, p := range jobs {
		drops := 0
		c := pairCheck{cfg: p.cfg, from: from, to: to, runs: rec.of(p.cfg.Name)}
		kept := 0
		for n := from; n.Before(to); n = n.Add(time.Second) {
			if c.kept(n) {
				kept++
				for item := range pairItems {
					if why := c.dropped(item, n); why != "" && !slices.ContainsFunc(c.runs, func(r pairRun) bool { return r.item == item && c.covers(r, n) }) {
						dropsBy[strings.SplitN(why, ":", 2)[0]]++
						drops++
					}
				}
			}
		}
		if kept > 0 && len(c.runs) == 0 {
			t.Errorf("%s never ran", p.cfg.Name)
		}
		if kept < 3 || p.hold != pairBusy {
			continue
		}
		var met bool
		switch p.cfg.Overlap {
		case job.OverlapBufferOne:
			met = slices.ContainsFunc(c.runs, func(r pairRun) bool { return r.kind == job.KindMisfire && r.through.After(r.fire) })
		case job.OverlapSkip:
			met = drops > 0
		case job.OverlapReplace:
			met = slices.ContainsFunc(c.runs, func(r pairRun) bool { return errors.Is(r.err, job.ErrReplaced) })
		case job.OverlapAllow:
			met = len(c.overlapping()) > 0
		}
		if !met {
			runs := make([]string, 0, len(c.runs))
			for _, r := range c.runs {
				runs = append(runs, r.String())
			}
			t.Errorf("%s: overlap %s never met a busy item (%d runs for %d fires):\n\t%s", p.cfg.Name, p.cfg.Overlap, len(c.runs), kept, strings.Join(runs, "\n\t"))
		}
	}
	t.Logf("fires dropped by a documented rule: %v", dropsBy)
}

// around returns item's last run that began before the fire of nominal
// time n and its first that began after it, for a lost fire's message.
func (c pairCheck) around(item int, n time.Time) []pairRun {
	var before, after []pairRun
	for _, r := range c.runs {
		if r.item != item {
			continue
		}
		if r.begin.Before(n) {
			before = []pairRun{r}
		} else if after == nil {
			after = []pairRun{r}
		}
	}
	return append(before, after...)
}

// overlapping returns the pairs of the job's runs of one item that
// overlapped in time.
func (c pairCheck) overlapping() [][2]pairRun {
	var out [][2]pairRun
	for i, a := range c.runs {
		for _, b := range c.runs[i+1:] {
			if a.item == b.item && a.begin.Before(b.end) && b.begin.Before(a.end) {
				out = append(out, [2]pairRun{a, b})
			}
		}
	}
	return out
}
