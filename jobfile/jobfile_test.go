package jobfile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
)

func TestBuildRejectsBadSections(t *testing.T) {
	head := "  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n"
	for _, c := range []struct{ name, job, want string }{
		{"script unknown key", "    type: script\n    script: {command: [x], comand: [y]}\n", `script.comand at line 10: unknown key (did you mean "command"?)`},
		{"script empty command", "    type: script\n    script: {command: []}\n", "command is empty"},
		{"script no command", "    type: script\n    script: {dir: /tmp}\n", "script.command at line 10: is required"},
		{"script string command", "    type: script\n    script: {command: echo hi}\n", "must be a list of arguments"},
		{"script bad grace", "    type: script\n    script: {command: [x], gracePeriod: soon}\n", `script.gracePeriod at line 10: "soon" is not a duration`},
		{"script passes a secret", "    type: script\n    script: {command: [x], passEnv: [HOME, SHARDJOB_TOKEN]}\n", "passEnv names SHARDJOB_TOKEN"},
		{"script sets a secret", "    type: script\n    script: {command: [x], env: {SHARDJOB_REGCENTER_DIGEST: a}}\n", "env sets SHARDJOB_REGCENTER_DIGEST"},
		{"script passEnv not a list", "    type: script\n    script: {command: [x], passEnv: HOME}\n", "script.passEnv at line 10: must be a list of strings"},
		{"http bad url", "    type: http\n    http: {url: \"ftp://x\"}\n", "scheme must be http or https"},
		{"http no url", "    type: http\n    http: {method: GET}\n", "http.url at line 10: is required"},
		{"http bad timeout", "    type: http\n    http: {url: \"http://x\", timeout: -1s}\n", "http.timeout at line 10: -1s must not be negative"},
		{"http bad template", "    type: http\n    http: {url: \"http://x\", body: \"{{.Nope}}\"}\n", "body template"},
		{"http template loop", "    type: http\n    http: {url: \"http://x\", body: \"{{range 250000000}}{{end}}\"}\n", "body template: range over 250000000: at most 10000 iterations"},
		{"http bodyExcerpt over its maximum", "    type: http\n    http: {url: \"http://x\", bodyExcerpt: 209715200}\n", "bodyExcerpt 209715200 is over the maximum of 65536"},
		{"http metadata address", "    type: http\n    http: {url: \"http://169.254.169.254/latest/meta-data/\"}\n", "a link-local address; set allowPrivateAddresses"},
		{"http allowPrivateAddresses not a bool", "    type: http\n    http: {url: \"http://x\", allowPrivateAddresses: maybe}\n", "http.allowPrivateAddresses at line 10: must be true or false"},
		{"unknown handler", "    type: http\n    errorHandler: pager\n    http: {url: \"http://x\"}\n", `errorHandler at line 10: errhandler: unknown handler: "pager"`},
		{"webhook without settings", "    type: http\n    errorHandler: webhook\n    http: {url: \"http://x\"}\n", "needs settings"},
		{"webhook without secret", "    type: http\n    errorHandler: {type: webhook, url: \"http://x\"}\n    http: {url: \"http://x\"}\n", "secret is required"},
		{"webhook secret from the console token", "    type: http\n    errorHandler: {type: webhook, url: \"https://x\", secretEnv: SHARDJOB_TOKEN}\n    http: {url: \"http://x\"}\n", "errorHandler.secretEnv at line 10: SHARDJOB_TOKEN is one of the instance's own settings"},
		{"stop bad after", "    type: http\n    errorHandler: {type: stop, after: 0}\n    http: {url: \"http://x\"}\n", "after 0 must be at least 1"},
		{"email unknown key", "    type: http\n    errorHandler: {type: email, addr: \"h:25\", from: a@b.c, to: [d@e.f], tls: off}\n    http: {url: \"http://x\"}\n", "errorHandler.tls at line 10: unknown key"},
		{"simple without handler", "    handler: nope\n", `wants Go handler "nope"`},
	} {
		f, _ := file(t, "unused", head+c.job)
		_, err := jobfile.Build(f.Jobs[0], nil, jobfile.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// allowPrivateAddresses lets an HTTP job call its own network.
func TestBuildHTTPAllowPrivateAddresses(t *testing.T) {
	f, _ := file(t, "unused", "  - name: a\n    type: http\n    cron: '@hourly'\n    shardingTotalCount: 1\n    http: {url: \"http://127.0.0.1:8765/\", allowPrivateAddresses: true}\n")
	if _, err := jobfile.Build(f.Jobs[0], nil, jobfile.Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestBuildDataflowStreaming(t *testing.T) {
	f, _ := file(t, "unused", "  - name: a\n    type: dataflow\n    cron: '@hourly'\n    shardingTotalCount: 1\n    dataflow: {streaming: true}\n")
	plain := job.SimpleFunc(func(context.Context, job.ShardingContext) error { return nil })
	_, err := jobfile.Build(f.Jobs[0], nil, jobfile.Options{Handlers: map[string]job.Job{"a": plain}})
	if !errors.Is(err, jobfile.ErrInvalidJob) || !strings.Contains(err.Error(), "not a dataflow job") {
		t.Fatalf("streaming on a simple handler: %v", err)
	}
}

func Example() {
	// A YAML file of script and HTTP jobs runs as one instance, no Go
	// code of the jobs' own; `shardjob run FILE` does exactly this.
	f, err := jobfile.Load(strings.NewReader(`
regcenter:
  servers: [127.0.0.1:2181]
  namespace: shop
jobs:
  - name: nightly-report
    type: script
    cron: "0 0 2 * * *"
    shardingTotalCount: 2
    shardingItemParameters: "0=eu,1=us"
    timeout: 30m
    errorHandler: {type: stop, after: 3}
    script:
      command: [/usr/local/bin/report, --format, csv]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	sp := f.Jobs[0]
	fmt.Println(sp.Name, sp.Type, sp.Timeout)
	// jobfile.Run(ctx, f, jobfile.RunOptions{}) runs it until ctx ends.

	// Output: nightly-report script 30m0s
}
