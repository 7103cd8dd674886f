package job_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// loseAnswers loses the answers of the first requests of each kind it is
// armed for, as a connection that drops with a request in flight does:
// "before" requests are lost on their way (not applied), "after" ones once
// applied. Either way the caller sees ErrConnectionLoss.
type loseAnswers struct {
	regcenter.Center

	mu   sync.Mutex
	plan map[string][]string // request kind → "before"/"after", in turn
	hits []string
}

func (l *loseAnswers) next(kind string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.plan[kind]) == 0 {
		return "", false
	}
	when := l.plan[kind][0]
	l.plan[kind] = l.plan[kind][1:]
	l.hits = append(l.hits, kind+" "+when)
	return when, true
}

func (l *loseAnswers) lost(kind string, do func() error) error {
	when, ok := l.next(kind)
	if !ok {
		return do()
	}
	if when == "after" {
		if err := do(); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: the answer to a %s was lost (%s it was applied)", regcenter.ErrConnectionLoss, kind, when)
}

func (l *loseAnswers) Multi(ctx context.Context, ops ...regcenter.Op) error {
	return l.lost("multi", func() error { return l.Center.Multi(ctx, ops...) })
}

func (l *loseAnswers) Create(ctx context.Context, p string, data []byte, mode regcenter.Mode) (string, error) {
	var made string
	err := l.lost("create", func() (err error) {
		made, err = l.Center.Create(ctx, p, data, mode)
		return err
	})
	return made, err
}

func (l *loseAnswers) Delete(ctx context.Context, p string, version int32) error {
	return l.lost("delete", func() error { return l.Center.Delete(ctx, p, version) })
}

// Start registers every job although the connection drops under its
// writes: new jobs' trees (a transaction lost before it is applied, one
// lost after, whose jobs the retry finds made and joins in a batch), the
// joins in a batch (transactions lost once applied: their jobs register
// node by node), the instance's node and a job registering node by node
// (creates whose answers were lost once applied, a delete lost on its
// way). The center retries only idempotent requests; Start tries the
// others again, and a step tried again after it was applied finds its
// work done.
func TestStartRegistersThroughLostAnswers(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	old := job.Config{Name: "old", Cron: "0 0 0 1 1 *", ShardingTotalCount: 2}
	startInstance(t, ns, "s0", old, rec)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wrap *loseAnswers
	rc, s := connectVia(t, ctx, ns, "s1", func(rc regcenter.Center) regcenter.Center {
		wrap = &loseAnswers{Center: rc, plan: map[string][]string{
			"multi":  {"before", "after", "after", "after"},
			"create": {"after", "after", "after"},
			"delete": {"before"},
		}}
		return wrap
	})
	names := []string{"old"}
	if err := s.Add(ctx, old, rec.job("s1")); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		cfg := job.Config{Name: fmt.Sprintf("new-%02d", i), Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}
		if err := s.Add(ctx, cfg, rec.job("s1")); err != nil {
			t.Fatal(err)
		}
		names = append(names, cfg.Name)
	}
	in := &instance{id: "s1", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start with lost answers: %v", err)
	}
	wrap.mu.Lock()
	hits := wrap.hits
	wrap.mu.Unlock()
	if len(hits) != 8 {
		t.Fatalf("lost the answers of %v, want 8: the case this test makes did not happen", hits)
	}
	sess := rc.Session().ID()
	for _, name := range names {
		ok, st, err := rc.Exists(ctx, layout.Job(name).Flag("s1", layout.Status))
		if err != nil {
			t.Fatal(err)
		}
		if !ok || st.EphemeralOwner != sess {
			t.Errorf("job %s: s1's status node exists=%v owner=0x%x, want ours (0x%x)", name, ok, st.EphemeralOwner, sess)
		}
	}
	if ok, _, err := rc.Exists(ctx, layout.Instance("s1")); err != nil || !ok {
		t.Errorf("s1's instance node: exists=%v err=%v", ok, err)
	}
}
