package job_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/testing/hostiledoc"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// logCapture keeps every log record's message and attributes, and passes
// them on to the test's log.
type logCapture struct {
	mu    sync.Mutex
	lines []string
	next  slog.Handler
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (c *logCapture) Handle(ctx context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	c.mu.Lock()
	c.lines = append(c.lines, b.String())
	c.mu.Unlock()
	if c.next.Enabled(ctx, r.Level) {
		return c.next.Handle(ctx, r)
	}
	return nil
}

func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *logCapture) WithGroup(string) slog.Handler      { return c }

// count returns how many lines contain every fragment.
func (c *logCapture) count(fragments ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
next:
	for _, l := range c.lines {
		for _, f := range fragments {
			if !strings.Contains(l, f) {
				continue next
			}
		}
		n++
	}
	return n
}

// TestClusterSurvivesHostileConfigNode writes the self-merge and the
// 40-level merge chain straight into a running job's config node: every
// instance logs the rejection, stays up and keeps firing on its last good
// config, and an instance started meanwhile starts and fires too.
func TestClusterSurvivesHostileConfigNode(t *testing.T) {
	ns := namespace(t)
	cfg := everySecond("hostile", 4)
	rec := newRecorder()
	logs := map[string]*logCapture{}
	start := func(id string) *instance {
		lc := &logCapture{next: testLogger(t).Handler()}
		logs[id] = lc
		return startInstance(t, ns, id, cfg, rec, job.WithLogger(slog.New(lc)))
	}
	a, b := start("h1"), start("h2")
	rec.waitFires(t, time.Now(), 1, 4, 30*time.Second)

	writer := connectRaw(t, ns)
	path := layout.Job(cfg.Name).Config()
	for i, doc := range []struct {
		name string
		data []byte
		want string
	}{
		{"self merge", hostiledoc.SelfMerge(cfg.Name), hostiledoc.StoredSelfMergeError},
		{"merge chain", hostiledoc.MergeChain(cfg.Name, 40), hostiledoc.StoredMergeChainError},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := writer.Set(ctx, path, doc.data, -1)
		cancel()
		if err != nil {
			t.Fatalf("%s: raw write: %v", doc.name, err)
		}
		since := time.Now()
		for _, id := range []string{"h1", "h2"} {
			lc := logs[id]
			waitUntil(t, 30*time.Second, func() bool {
				return lc.count("config node rejected; last good config stays in force", doc.want) >= 1
			})
		}
		// Both instances keep firing every item on the last good config.
		fires := rec.waitFires(t, since, 2, 4, 30*time.Second)
		for _, f := range fires {
			by := checkFire(t, f, rec.fires()[f], 4)
			if i == 0 && len(by) != 2 {
				t.Errorf("%s: fire %s ran on %d instances, want both", doc.name, f.Format("15:04:05"), len(by))
			}
		}
		for _, in := range []*instance{a, b} {
			if got := in.sched.Jobs(); len(got) != 1 || got[0] != cfg.Name {
				t.Errorf("%s: instance %s runs %v", doc.name, in.id, got)
			}
		}
	}

	// An instance starting while the node holds the chain starts on its own
	// config, says why, and takes its share of the items.
	c := start("h3")
	if n := logs["h3"].count("stored config is invalid", hostiledoc.StoredMergeChainError); n != 1 {
		t.Errorf("h3 logged the invalid stored config %d times, want 1", n)
	}
	waitUntil(t, 30*time.Second, func() bool {
		for _, r := range rec.snapshot() {
			if r.server == c.id {
				return true
			}
		}
		return false
	})
}

// TestSchedulerAddRefusesOversizedConfig: Add names the field that would
// not fit in the config node, before ZooKeeper sees it.
func TestSchedulerAddRefusesOversizedConfig(t *testing.T) {
	rc := connectRaw(t, namespace(t))
	s, err := job.NewScheduler(rc, job.WithServerID("big"), job.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	items := everySecond("big-items", 10000)
	items.ShardingItemParameters = hostiledoc.ItemParameters(10000, 1_260_000)
	param := everySecond("big-param", 4)
	param.JobParameter = strings.Repeat("p", 2<<20)
	for _, tt := range []struct {
		cfg  job.Config
		want string
	}{
		{items, "shardingItemParameters is "},
		{param, "jobParameter is 2,097,152 bytes: 1,052,672 bytes over the limit of 1,044,480"},
	} {
		err := s.Add(ctx, tt.cfg, job.SimpleFunc(func(context.Context, job.ShardingContext) error { return nil }))
		if !errors.Is(err, job.ErrConfigTooLarge) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Add(%s) = %v, want ErrConfigTooLarge saying %q", tt.cfg.Name, err, tt.want)
		}
	}
	if got := s.Jobs(); len(got) != 0 {
		t.Errorf("jobs added: %v", got)
	}
}

func connectRaw(t *testing.T, ns string) regcenter.Center {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc, err := regcenter.Open(ctx, onRegistry(regcenter.Config{Namespace: ns, SessionTimeout: 4 * time.Second}), regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}
