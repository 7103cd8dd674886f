package job

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// TestARetryCutShortByALostLeaseContinuesItsCount: a run fails, and its
// retry's wait is cut short by a lease that lapsed (the registry cut off).
// Once the job is registered again, the fire is made up here — taken into
// the run of the fires missed while disconnected — and that run continues
// the count: attempt 2, not 1 again. (Two chaos runs on etcd saw attempt 1
// again: the count noted for the fire was taken by a run of another fire.)
func TestARetryCutShortByALostLeaseContinuesItsCount(t *testing.T) {
	zc := zktest.Start(t)
	proxy, err := zktest.NewProxy(zc.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	rc := connectOne(t, regcenter.Config{Servers: []string{proxy.Addr()}, Namespace: "cut", SessionTimeout: 9 * time.Second})
	var mu sync.Mutex
	var attempts []int
	tried := make(chan struct{}, 8)
	flaky := SimpleFunc(func(_ context.Context, sc ShardingContext) error {
		mu.Lock()
		attempts = append(attempts, sc.Attempt)
		mu.Unlock()
		tried <- struct{}{}
		if sc.Attempt == 1 {
			return context.DeadlineExceeded // any error: the first attempt fails
		}
		return nil
	})
	cfg := Config{Name: "cut", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1,
		Retry: RetryPolicy{Attempts: 3, Backoff: time.Minute, MaxBackoff: time.Minute}} // a wait the lapse cuts short
	_, r := runOneJob(t, rc, cfg, flaky)
	if err := r.prepareSync(); err != nil {
		t.Fatal(err)
	}
	ended := rc.Session()
	first := time.Now().Truncate(time.Second)
	fired := make(chan struct{})
	go func() {
		defer close(fired)
		r.fireAssigned(ended, first, KindFire, nil)
	}()
	<-tried // attempt 1 failed; the retry waits a minute

	proxy.Block()
	select {
	case <-ended.Done():
	case <-time.After(time.Minute):
		t.Fatal("the session's generation did not end with the registry cut off")
	}
	// A fire skipped meanwhile: the registration runs it, and the fire
	// owed since the first with it.
	r.book.NoteSuspendedMiss(first.Add(time.Second))
	<-fired
	proxy.Unblock()
	select {
	case <-tried:
	case <-time.After(time.Minute):
		t.Fatal("the fire cut short was not made up once registered again")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 2 || attempts[1] != 2 {
		t.Fatalf("attempts %v; want [1 2]: the make-up continues the count", attempts)
	}
}
