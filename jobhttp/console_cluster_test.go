package jobhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// consoleCluster is two instances (a1, a2) running jobs, and the handler
// with its console on a separate registry center session, mounted under
// /shardjob/ as an application would mount it.
type consoleCluster struct {
	t   *testing.T
	ns  string
	rc  *zookeeper.Center
	srv *httptest.Server
	// console is the console's URL.
	console string

	mu   sync.Mutex
	runs map[string]map[job.Kind]int // job -> kind -> executions
}

// consoleSetup tunes a consoleCluster: the instances' options and what
// the jobs do.
type consoleSetup struct {
	instance func(id string) []job.Option
	exec     func(ctx context.Context, sc job.ShardingContext) error
	// mux adds the application's own routes beside the handler's.
	mux func(mux *http.ServeMux)
}

func newConsoleCluster(t *testing.T, opts jobhttp.Options, setup consoleSetup, jobs ...job.Config) *consoleCluster {
	t.Helper()
	cc := &consoleCluster{t: t, ns: fmt.Sprintf("console%d-%d", os.Getpid(), httpNS.Add(1)), runs: map[string]map[job.Kind]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect := func() *zookeeper.Center {
		rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: cc.ns, SessionTimeout: 4 * time.Second}, regcenter.WithLogger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		return rc
	}
	for _, id := range []string{"a1", "a2"} {
		rc := connect()
		sopts := []job.Option{job.WithServerID(id), job.WithLogger(testLogger(t).With("instance", id))}
		if setup.instance != nil {
			sopts = append(sopts, setup.instance(id)...)
		}
		s, err := job.NewScheduler(rc, sopts...)
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range jobs {
			err := s.Add(ctx, cfg, job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
				cc.mu.Lock()
				if cc.runs[sc.JobName] == nil {
					cc.runs[sc.JobName] = map[job.Kind]int{}
				}
				cc.runs[sc.JobName][sc.Kind]++
				cc.mu.Unlock()
				if setup.exec != nil {
					return setup.exec(ctx, sc)
				}
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.Shutdown(sctx); err != nil {
				t.Errorf("shutdown %s: %v", id, err)
			}
		})
	}
	cc.rc = connect()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	mux := http.NewServeMux()
	mux.Handle("/shardjob/", http.StripPrefix("/shardjob", jobhttp.NewHandler(cc.rc, opts)))
	if setup.mux != nil {
		setup.mux(mux)
	}
	cc.srv = httptest.NewServer(mux)
	t.Cleanup(cc.srv.Close)
	cc.console = cc.srv.URL + "/shardjob/console/"
	return cc
}

// ran counts the executions of jobName of kind.
func (cc *consoleCluster) ran(jobName string, kind job.Kind) int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.runs[jobName][kind]
}

// api is an httpCluster view of the same server, for its request helpers.
func (cc *consoleCluster) api() *httpCluster {
	return &httpCluster{t: cc.t, ns: cc.ns, srv: cc.srv, rc: cc.rc}
}
