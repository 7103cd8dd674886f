package jobfile_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/jobfile"
	"github.com/shardjob/shardjob/regcenter"
)

// holdingCenter is a registry center whose reads of one path wait until
// the test lets them go (or their context ends): a definition that takes
// as long as the test likes to read.
type holdingCenter struct {
	regcenter.Center
	path    string
	held    chan struct{} // closed when a read of path is waiting
	release chan struct{} // closed by the test
	once    sync.Once
}

func (c *holdingCenter) Get(ctx context.Context, path string) ([]byte, regcenter.Stat, error) {
	if path == c.path {
		c.once.Do(func() { close(c.held) })
		select {
		case <-c.release:
		case <-ctx.Done():
			return nil, regcenter.Stat{}, ctx.Err()
		}
	}
	return c.Center.Get(ctx, path)
}

// TestFollowGoesOnPastAHeldAndABadDefinition: while one definition takes
// long to read (held here until the test lets it go), and another cannot
// be run at all, the follower adds the good definitions defined after
// them; the bad one is logged once, and the held one is added once it can
// be read.
func TestFollowGoesOnPastAHeldAndABadDefinition(t *testing.T) {
	ns := namespace()
	f, _ := file(t, ns, "")
	h := newHits(t)
	var logs logBuffer
	in := start(t, f, "h1", "")
	hc := &holdingCenter{Center: in.rc, path: layout.Job("slow").Definition(), held: make(chan struct{}), release: make(chan struct{})}
	released := sync.OnceFunc(func() { close(hc.release) })
	t.Cleanup(released)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- jobfile.Follow(ctx, in.sched, hc, jobfile.FollowOptions{Namespace: ns,
			Options: jobfile.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Follow: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Follow did not return after its context ended")
		}
	})
	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer dcancel()
	if _, err := jobfile.Define(dctx, in.rc, []byte(httpDefinition("slow", h.srv.URL))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hc.held:
	case <-time.After(60 * time.Second):
		t.Fatal("the follower never read the held definition")
	}
	// A definition no instance can add: its config is refused by the
	// scheduler (written behind the API's back, as Define refuses it).
	bad := "name: bad\ncron: \"* * * * * *\"\nshardingTotalCount: 1\nshardingStrategy: no-such-strategy\ntype: http\nhttp: {url: " + h.srv.URL + "}\n"
	p := layout.Job("bad")
	if err := in.rc.Multi(dctx, regcenter.CreateOp{Path: p.Root()}, regcenter.CreateOp{Path: p.Config(), Data: []byte("name: bad\n")},
		regcenter.CreateOp{Path: p.Definition(), Data: []byte(bad)}); err != nil {
		t.Fatal(err)
	}
	var good []string
	for i := range 5 {
		name := fmt.Sprintf("good%d", i)
		good = append(good, name)
		if _, err := jobfile.Define(dctx, in.rc, []byte(httpDefinition(name, h.srv.URL))); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the good definitions to be added while the held one is read", 60*time.Second, func() bool {
		for _, name := range good {
			if !hasJob(in.sched, name) {
				return false
			}
		}
		return true
	})
	waitFor(t, "the bad definition's refusal", 30*time.Second, func() bool {
		return logs.count("job definition refused", "job=bad", "no-such-strategy") > 0
	})
	if hasJob(in.sched, "slow") || hasJob(in.sched, "bad") {
		t.Fatalf("jobs on the follower: %v", in.sched.Jobs())
	}
	released()
	waitFor(t, "the held definition to be added once it can be read", 60*time.Second, func() bool { return hasJob(in.sched, "slow") })
	// A definition written after the rest is added after them: by then
	// the bad one was not tried again.
	if _, err := jobfile.Define(dctx, in.rc, []byte(httpDefinition("last", h.srv.URL))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the last definition", 60*time.Second, func() bool { return hasJob(in.sched, "last") })
	if n := logs.count("job=bad"); n != 1 {
		t.Fatalf("the bad definition was logged %d times, want once:\n%s", n, logs.buf.String())
	}
}

// TestFollowAddsAChainInOrder: definitions that run after one another,
// stored before any follower reads them, are all added (each after the
// jobs it runs after), whatever order the follower reads them in; one
// that runs after a definition this instance refuses is refused too.
func TestFollowAddsAChainInOrder(t *testing.T) {
	ns := namespace()
	f, _ := file(t, ns, "")
	var logs logBuffer
	in := start(t, f, "c1", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 8
	def := func(i int) string {
		d := fmt.Sprintf("name: c%d\ncron: \"0 0 0 1 1 *\"\nshardingTotalCount: 1\ntype: http\nhttp: {url: \"http://jobs.example.com/\"}\n", i)
		if i > 0 {
			d += fmt.Sprintf("after: c%d\n", i-1)
		}
		return d
	}
	for i := range n {
		if _, err := jobfile.Define(ctx, in.rc, []byte(def(i))); err != nil {
			t.Fatal(err)
		}
	}
	// A script job no instance here runs, and one after it.
	script := "name: s0\ncron: \"0 0 0 1 1 *\"\nshardingTotalCount: 1\ntype: script\nscript: {command: [/bin/true]}\n"
	if _, err := jobfile.Define(ctx, in.rc, []byte(script)); err != nil {
		t.Fatal(err)
	}
	after := "name: s1\ncron: \"0 0 0 1 1 *\"\nshardingTotalCount: 1\ntype: http\nhttp: {url: \"http://jobs.example.com/\"}\nafter: s0\n"
	if _, err := jobfile.Define(ctx, in.rc, []byte(after)); err != nil {
		t.Fatal(err)
	}
	follow(t, in, jobfile.FollowOptions{Options: jobfile.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	waitFor(t, "the whole chain on the follower", 60*time.Second, func() bool {
		for i := range n {
			if !hasJob(in.sched, fmt.Sprintf("c%d", i)) {
				return false
			}
		}
		return true
	})
	waitFor(t, "the refusal of the job after the script", 30*time.Second, func() bool {
		return logs.count("job definition refused", "job=s1", `after job \"s0\"`) == 1
	})
	if hasJob(in.sched, "s1") || hasJob(in.sched, "s0") {
		t.Fatalf("jobs on the follower: %v", in.sched.Jobs())
	}
	if n := logs.count("job definition refused", "job=c"); n != 0 {
		t.Fatalf("%d refusals of the chain:\n%s", n, logs.buf.String())
	}
}

// TestFollowAddsAThousandDefinitions: 1,000 definitions stored side by
// side (the namespace's default limit, which refuses one more) are all
// added by a follower. The wait is gated on the follower's jobs, bounded
// only as any wait is; the test prints how long it took and the registry
// requests per definition, the follower's and the definer's apart.
func TestFollowAddsAThousandDefinitions(t *testing.T) {
	ns := namespace()
	f, _ := file(t, ns, "")
	in := start(t, f, "k1", "")
	definer := start(t, f, "k0", "")
	follow(t, in, jobfile.FollowOptions{Options: jobfile.Options{Logger: testlog.Logger(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const n = jobfile.DefaultMaxDefinitions
	def := func(i int) []byte {
		return fmt.Appendf(nil, "name: d%04d\ncron: \"0 0 0 1 1 *\"\nshardingTotalCount: 1\ntype: http\nhttp: {url: \"http://jobs.example.com/\"}\n", i)
	}
	followerBefore, definerBefore := in.rc.Stats(), definer.rc.Stats()
	began := time.Now()
	parallel.Each(n, 16, func(i int) {
		if _, err := jobfile.Define(ctx, definer.rc, def(i)); err != nil {
			t.Error(err)
		}
	})
	defined := time.Since(began)
	if t.Failed() {
		t.FailNow()
	}
	if _, err := jobfile.Define(ctx, definer.rc, def(n)); !errors.Is(err, jobfile.ErrTooManyDefinitions) || !strings.Contains(err.Error(), "1000") {
		t.Fatalf("definition %d: %v; want ErrTooManyDefinitions naming the limit", n+1, err)
	}
	waitFor(t, "every definition on the follower", 2*time.Minute, func() bool { return len(in.sched.Jobs()) == n })
	followed := time.Since(began)
	fs, ds := in.rc.Stats().Sub(followerBefore), definer.rc.Stats().Sub(definerBefore)
	t.Logf("%d definitions: stored in %v (%.1f requests each), all added by the follower %v after the first was stored (%.1f requests each: %d reads, %d writes, %d multis, %d watches)",
		n, defined.Round(time.Millisecond), float64(ds.Total())/n, followed.Round(time.Millisecond), float64(fs.Total())/n, fs.Reads, fs.Writes, fs.Multis, fs.Watches)
	if got := in.sched.Jobs(); len(got) != n || got[0] != "d0000" || got[n-1] != fmt.Sprintf("d%04d", n-1) {
		t.Fatalf("jobs on the follower: %d, %v … %v", len(got), got[:1], got[len(got)-1:])
	}
}

// TestFollowAnnouncesWhatItFollows: a following instance says, while it
// follows, which types of definition it runs (http; script too with
// AllowScript), and takes it back when Follow returns.
func TestFollowAnnouncesWhatItFollows(t *testing.T) {
	ns := namespace()
	f, _ := file(t, ns, "")
	httpOnly, scripts := start(t, f, "a-http", ""), start(t, f, "a-script", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	followers := func(typ string) []string {
		t.Helper()
		ids, err := jobfile.Followers(ctx, httpOnly.rc, jobfile.Type(typ))
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if ids := followers("http"); len(ids) != 0 {
		t.Fatalf("http followers before any follows: %v", ids)
	}
	follow(t, httpOnly, jobfile.FollowOptions{Options: jobfile.Options{Logger: testlog.Logger(t)}})
	fctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- jobfile.Follow(fctx, scripts.sched, scripts.rc, jobfile.FollowOptions{AllowScript: true, Options: jobfile.Options{Logger: testlog.Logger(t)}})
	}()
	defer stop()
	waitFor(t, "both announcements", 30*time.Second, func() bool {
		return slices.Equal(followers("http"), []string{"a-http", "a-script"}) && slices.Equal(followers("script"), []string{"a-script"})
	})
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Follow did not return")
	}
	// Withdrawn before Follow returned.
	if h, s := followers("http"), followers("script"); !slices.Equal(h, []string{"a-http"}) || len(s) != 0 {
		t.Fatalf("after one instance stopped following: http %v, script %v", h, s)
	}
}
