package jobtype_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype"
	"github.com/shardjob/shardjob/jobtype/httpjob"
	"github.com/shardjob/shardjob/jobtype/script"
	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/zookeeper" // regcenter.Open serves Config.Servers
)

// TestJobTypesRecordTheirOutput runs a script job and an HTTP job under a
// scheduler on a real ZooKeeper and checks the outputs the listeners get:
// a script's standard output (JSON kept as JSON, a long text's end, a
// failed command's text), an HTTP response's body (JSON, text, a failed
// request's body).
func TestJobTypesRecordTheirOutput(t *testing.T) {
	long := strings.Repeat("a line of output that goes on <&>\n", 3000) // about 100 KiB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c jobtype.Context
		if err := json.Unmarshal([]byte(r.Header.Get(httpjob.DefaultContextHeader)), &c); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		switch c.ShardingParameter {
		case "json":
			io.WriteString(w, `{"accepted": 3}`)
		case "long":
			io.WriteString(w, long)
		default:
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, "no such thing")
		}
	}))
	t.Cleanup(srv.Close)

	var mu sync.Mutex
	got := map[string]listener.Execution{}
	all := make(chan struct{})
	l := listener.Funcs{After: func(e listener.Execution) {
		mu.Lock()
		defer mu.Unlock()
		key := fmt.Sprintf("%s/%d", e.Job, e.Item)
		if _, ok := got[key]; ok {
			return
		}
		got[key] = e
		if len(got) == 6 {
			close(all)
		}
	}}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := fmt.Sprintf("jobtype-output-%d", time.Now().UnixNano())
	rc, err := regcenter.Open(ctx, regcenter.Config{Servers: zk.Servers(), Namespace: ns, SessionTimeout: 4 * time.Second},
		regcenter.WithLogger(testlog.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	s, err := job.NewScheduler(rc, job.WithServerID("o1"), job.WithLogger(testlog.Logger(t)), job.WithListener(l))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer scancel()
		if err := s.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	sj, err := script.New(script.Config{Shell: true, Logger: testlog.Logger(t), Command: []string{`
case "$1" in
*'"shardingParameter":"json"'*) printf '{"rows": %d}\n' 12 ;;
*'"shardingParameter":"long"'*) i=0; while [ $i -lt 3000 ]; do echo 'a line of output that goes on <&>'; i=$((i+1)); done; echo 'the last line' ;;
*) echo 'half done'; exit 3 ;;
esac`}})
	if err != nil {
		t.Fatal(err)
	}
	hj, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: srv.URL, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	params := "0=json,1=long,2=fail"
	if err := s.Add(ctx, job.Config{Name: "script", Cron: "* * * * * *", ShardingTotalCount: 3, ShardingItemParameters: params}, sj); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, job.Config{Name: "http", Cron: "* * * * * *", ShardingTotalCount: 3, ShardingItemParameters: params}, hj); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-all:
	case <-time.After(60 * time.Second):
		t.Fatal("not every item ran within 60s")
	}
	mu.Lock()
	defer mu.Unlock()
	text := func(key string) string {
		var s string
		if err := json.Unmarshal(got[key].Output, &s); err != nil {
			t.Errorf("%s: output %.80s is not a JSON string: %v", key, got[key].Output, err)
		}
		return s
	}
	if o := string(got["script/0"].Output); o != `{"rows":12}` {
		t.Errorf("script/0: output %s, want the JSON printed", o)
	}
	if o := got["script/1"].Output; len(o) > job.MaxOutputSize || !strings.HasSuffix(text("script/1"), "<&>\nthe last line") {
		t.Errorf("script/1: %d bytes of output ending %q, want at most %d ending with the last line", len(o), o[max(0, len(o)-40):], job.MaxOutputSize)
	}
	if got["script/2"].Err == nil || text("script/2") != "half done" {
		t.Errorf("script/2: err %v, output %s; want a failure with its output", got["script/2"].Err, got["script/2"].Output)
	}
	if o := string(got["http/0"].Output); o != `{"accepted":3}` {
		t.Errorf("http/0: output %s, want the JSON body", o)
	}
	if o := got["http/1"].Output; len(o) > job.MaxOutputSize || len(o) < job.MaxOutputSize-8 || !strings.HasPrefix(long, text("http/1")) {
		t.Errorf("http/1: %d bytes of output, want the body's start in at most %d", len(o), job.MaxOutputSize)
	}
	if got["http/2"].Err == nil || text("http/2") != "no such thing" {
		t.Errorf("http/2: err %v, output %s; want a failure with the body", got["http/2"].Err, got["http/2"].Output)
	}
}
