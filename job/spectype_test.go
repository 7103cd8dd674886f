package job_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/listener"
)

const typesRC = "regcenter:\n  servers: [127.0.0.1:2181]\n  namespace: t\n"

func TestLoadJobTypes(t *testing.T) {
	doc := typesRC + `jobs:
  - name: plain
    cron: "@hourly"
    shardingTotalCount: 1
    timeout: 90s
  - name: flow
    type: dataflow
    handler: orders
    cron: "@hourly"
    shardingTotalCount: 2
    dataflow: {streaming: true}
    errorHandler: log
  - name: sh
    type: script
    cron: "@hourly"
    shardingTotalCount: 2
    script:
      command: [/bin/echo, hi]
  - name: web
    type: http
    cron: "@hourly"
    shardingTotalCount: 2
    http: {url: "http://127.0.0.1:1/x"}
    errorHandler: {type: webhook, url: "http://127.0.0.1:1/hook"}
`
	f, err := job.Load(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	types := []job.Type{job.TypeSimple, job.TypeDataflow, job.TypeScript, job.TypeHTTP}
	for i, sp := range f.Jobs {
		if sp.TypeOrDefault() != types[i] {
			t.Errorf("%s: type %q, want %q", sp.Name, sp.TypeOrDefault(), types[i])
		}
		if (sp.Section != nil) != (i > 0) {
			t.Errorf("%s: section %v", sp.Name, sp.Section)
		}
	}
	if f.Jobs[0].Timeout != 90*time.Second {
		t.Errorf("timeout %v", f.Jobs[0].Timeout)
	}
	if f.Jobs[1].ErrorHandler == nil || f.Jobs[1].ErrorHandler.Value != "log" || f.Jobs[3].ErrorHandler == nil {
		t.Errorf("error handlers %v %v", f.Jobs[1].ErrorHandler, f.Jobs[3].ErrorHandler)
	}
	// Script and HTTP jobs are not bound by name.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, namespace(t), "s1")
	defer rc.Close()
	err = s.AddSpecs(ctx, f.Jobs[2:3], nil)
	if !errors.Is(err, job.ErrUnknownHandler) || !strings.Contains(err.Error(), "jobfile") {
		t.Errorf("AddSpecs of a script job: %v", err)
	}
}

func TestLoadJobTypesRejectsBadInput(t *testing.T) {
	job1 := "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n"
	for _, c := range []struct{ name, doc, want string }{
		{"unknown type", job1 + "    type: cobol\n", `type at line 8: "cobol" is not a job type`},
		{"script without section", job1 + "    type: script\n", "type script at line 8: needs a script: section describing the command"},
		{"section of another type", job1 + "    type: http\n    script: {command: [x]}\n", `key "script" at line 9: belongs to type script, but the job's type is http`},
		{"section without type", job1 + "    http: {url: x}\n", `key "http" at line 8: belongs to type http, but the job's type is simple`},
		{"two sections", job1 + "    type: http\n    http: {url: x}\n    script: {command: [x]}\n", "a job has one type's section"},
		{"handler on script", job1 + "    type: script\n    handler: x\n    script: {command: [x]}\n", "a script job runs no Go handler"},
		{"section not a mapping", job1 + "    type: script\n    script: /bin/true\n", "script at line 9: must be a mapping"},
		{"negative timeout", job1 + "    timeout: -5s\n", "timeout -5s at line 8: must not be negative"},
		{"bad timeout", job1 + "    timeout: soon\n", `timeout at line 8: "soon" is not a duration`},
		{"misspelt type key", job1 + "    tpye: script\n", `unknown key "tpye" at line 8 (did you mean "type"?)`},
	} {
		_, err := job.Load(strings.NewReader(typesRC + c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, job.ErrInvalidConfig) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// A job that runs past its Timeout fails: its context ends with
// ErrExecutionTimeout, the error is the item's, and the fire completes.
func TestTimeoutFailsTheExecution(t *testing.T) {
	ns := namespace(t)
	var mu sync.Mutex
	var errs []error
	l := listener.Funcs{After: func(e listener.Execution) {
		mu.Lock()
		errs = append(errs, e.Err)
		mu.Unlock()
	}}
	causes := make(chan error, 16)
	cfg := everySecond("slow", 2)
	cfg.Timeout = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, s := connect(t, ctx, ns, "s1", job.WithListener(l))
	in := &instance{id: "s1", rc: rc, sched: s}
	t.Cleanup(func() { in.stop(t) })
	if err := s.Add(ctx, cfg, job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		<-ctx.Done()
		select {
		case causes <- context.Cause(ctx):
		default:
		}
		return ctx.Err()
	})); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-causes:
		if !errors.Is(c, job.ErrExecutionTimeout) {
			t.Fatalf("the item's context ended with %v, want ErrExecutionTimeout", c)
		}
	case <-ctx.Done():
		t.Fatal("no execution reached its timeout")
	}
	for {
		mu.Lock()
		n := len(errs)
		var first error
		if n > 0 {
			first = errs[0]
		}
		mu.Unlock()
		if n > 0 {
			if !errors.Is(first, job.ErrExecutionTimeout) || !errors.Is(first, context.DeadlineExceeded) {
				t.Fatalf("execution error %v, want ErrExecutionTimeout wrapping what the job returned", first)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no execution ended")
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The failed fire completed: its record carries the error.
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _, err := rc.Get(ctx, "/slow/execution/0/completed")
		if err == nil && strings.Contains(string(data), "timed out") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("completed node %q %v, want the timeout error recorded", data, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
