package jobfile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
)

func TestDecodeSpec(t *testing.T) {
	ctx := context.Background()
	sp, err := jobfile.DecodeSpec(ctx, []byte("name: ping\ncron: '*/5 * * * * *'\nshardingTotalCount: 2\ntype: http\nhttp:\n  url: http://127.0.0.1:1/\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Name != "ping" || sp.ShardingTotalCount != 2 || sp.Type != jobfile.TypeHTTP || sp.Section == nil {
		t.Fatalf("decoded %+v", sp)
	}

	_, err = jobfile.DecodeSpec(ctx, []byte("name: ping\ncron: '*/5 * * * * *'\nshardingTotalCont: 2\ntype: http\nhttp: {url: x}\n"))
	if !errors.Is(err, job.ErrUnknownKey) || !strings.Contains(err.Error(), `did you mean "shardingTotalCount"`) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("misspelt key: %v", err)
	}
	_, err = jobfile.DecodeSpec(ctx, []byte("name: ping\ncron: '*/5 * * * * *'\nshardingTotalCount: 1\ntype: script\n"))
	if !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), "needs a script: section") {
		t.Fatalf("type without its section: %v", err)
	}
	if _, err := jobfile.DecodeSpec(ctx, []byte("  \n")); !errors.Is(err, job.ErrInvalidConfig) {
		t.Fatalf("empty document: %v", err)
	}
	if _, err := jobfile.DecodeSpec(ctx, []byte("[1, 2]")); !errors.Is(err, job.ErrInvalidConfig) {
		t.Fatalf("a list: %v", err)
	}
}

const typesRC = "regcenter:\n  servers: [127.0.0.1:2181]\n  namespace: t\n"

func TestLoadJobTypes(t *testing.T) {
	clearRegcenterEnvForTest(t)
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
	f, err := jobfile.Load(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	types := []jobfile.Type{jobfile.TypeSimple, jobfile.TypeDataflow, jobfile.TypeScript, jobfile.TypeHTTP}
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
	for i, sp := range f.Jobs {
		if sp.Bound() != (i < 2) {
			t.Errorf("%s: Bound() = %v", sp.Name, sp.Bound())
		}
	}
}

func TestLoadJobTypesRejectsBadInput(t *testing.T) {
	clearRegcenterEnvForTest(t)
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
		_, err := jobfile.Load(strings.NewReader(typesRC + c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, job.ErrInvalidConfig) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
}
