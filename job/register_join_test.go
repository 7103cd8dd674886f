package job_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// TestJoiningExistingJobsCost counts the requests an instance sends to
// start jobs that exist already: N jobs made by a first instance, joined
// by a second (a server id new to them), then by the second again after
// a graceful restart (its server nodes left from its previous life). The
// count is the registry's own (regcenter.Stats, as tools/scalebench counts
// it: reads, writes, transactions and watches, each request one), over
// Start, per job.
func TestJoiningExistingJobsCost(t *testing.T) {
	const n = 50
	ns := namespace(t)
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("j%02d", i)
	}
	start := func(id string) (*instance, regcenter.Stats, *callLog) {
		var log *callLog
		rc, s := connectVia(t, ctx, ns, id, func(rc regcenter.Center) regcenter.Center {
			log = &callLog{Center: rc}
			return log
		})
		for _, name := range names {
			// Fires once a year: nothing prepares at once.
			if err := s.Add(ctx, job.Config{Name: name, Cron: "0 0 0 1 1 *", ShardingTotalCount: 2}, rec.job(id)); err != nil {
				t.Fatal(err)
			}
		}
		before := rc.Stats()
		log.on.Store(true)
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		log.on.Store(false)
		got := rc.Stats().Sub(before)
		in := &instance{id: id, rc: rc, sched: s}
		t.Cleanup(func() { in.stop(t) })
		return in, got, log
	}
	report := func(what string, st regcenter.Stats, log *callLog) {
		t.Logf("%s, %d jobs: %.2f requests per job (reads %.2f, writes %.2f, multis %.2f, watches %.2f); %d in all",
			what, n, float64(st.Total())/n, float64(st.Reads)/n, float64(st.Writes)/n, float64(st.Multis)/n, float64(st.Watches)/n, st.Total())
		t.Logf("%s: calls, a job's name as J:\n%s", what, log.summary())
	}
	start("s1")
	s2, st, log := start("s2")
	report("a second instance", st, log)
	s2.stop(t)
	_, st, log = start("s2")
	report("the second restarted", st, log)
}

// callLog records every call sent through it while on, as "KIND PATH…".
type callLog struct {
	regcenter.Center
	on   atomic.Bool
	mu   sync.Mutex
	sent []string
}

func (l *callLog) note(kind string, paths ...string) {
	if l.on.Load() {
		l.mu.Lock()
		l.sent = append(l.sent, kind+" "+strings.Join(paths, " "))
		l.mu.Unlock()
	}
}

func (l *callLog) Get(ctx context.Context, p string) ([]byte, regcenter.Stat, error) {
	l.note("get", p)
	return l.Center.Get(ctx, p)
}

func (l *callLog) Exists(ctx context.Context, p string) (bool, regcenter.Stat, error) {
	l.note("exists", p)
	return l.Center.Exists(ctx, p)
}

func (l *callLog) Children(ctx context.Context, p string) ([]string, error) {
	l.note("children", p)
	return l.Center.Children(ctx, p)
}

func (l *callLog) Create(ctx context.Context, p string, data []byte, mode regcenter.Mode) (string, error) {
	l.note("create", p)
	return l.Center.Create(ctx, p, data, mode)
}

func (l *callLog) EnsurePath(ctx context.Context, p string) error {
	l.note("ensure", p)
	return l.Center.EnsurePath(ctx, p)
}

func (l *callLog) Set(ctx context.Context, p string, data []byte, version int32) (regcenter.Stat, error) {
	l.note("set", p)
	return l.Center.Set(ctx, p, data, version)
}

func (l *callLog) Delete(ctx context.Context, p string, version int32) error {
	l.note("delete", p)
	return l.Center.Delete(ctx, p, version)
}

func (l *callLog) DeleteTree(ctx context.Context, p string) error {
	l.note("deletetree", p)
	return l.Center.DeleteTree(ctx, p)
}

func (l *callLog) Multi(ctx context.Context, ops ...regcenter.Op) error {
	var paths []string
	for _, op := range ops {
		switch o := op.(type) {
		case regcenter.CreateOp:
			paths = append(paths, "+"+o.Path)
		case regcenter.SetOp:
			paths = append(paths, "="+o.Path)
		case regcenter.DeleteOp:
			paths = append(paths, "-"+o.Path)
		case regcenter.CheckOp:
			paths = append(paths, "?"+o.Path)
		}
	}
	l.note("multi", paths...)
	return l.Center.Multi(ctx, ops...)
}

func (l *callLog) Watch(p string, kind regcenter.WatchKind, fn func(regcenter.Event)) func() {
	l.note(fmt.Sprint("watch", kind), p)
	return l.Center.Watch(p, kind, fn)
}

func (l *callLog) WatchNow(ctx context.Context, p string, kind regcenter.WatchKind, fn func(regcenter.Event)) (regcenter.WatchState, func(), error) {
	l.note(fmt.Sprint("watchnow", kind), p)
	return l.Center.WatchNow(ctx, p, kind, fn)
}

var jobName = regexp.MustCompile(`/j\d\d(/|\b)`)

// summary counts the calls by kind and path, a job's name as J.
func (l *callLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	count := map[string]int{}
	for _, c := range l.sent {
		c = jobName.ReplaceAllString(c, "/J$1")
		if strings.HasPrefix(c, "multi ") {
			// A group of jobs' ops: count the job's ops once.
			seen := map[string]bool{}
			var ops []string
			for _, op := range strings.Fields(c)[1:] {
				if !seen[op] {
					seen[op] = true
					ops = append(ops, op)
				}
			}
			c = "multi " + strings.Join(ops, " ")
		}
		count[c]++
	}
	var b strings.Builder
	for _, c := range slices.Sorted(maps.Keys(count)) {
		fmt.Fprintf(&b, "  %4d %s\n", count[c], c)
	}
	return b.String()
}
