package jobfile_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/hostiledoc"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
)

// FuzzDecodeDefinition: whatever a definition node holds (written by
// Define, by hand, by a raw etcd client), a follower's decoder takes it or
// refuses it with one of its sentinels, without a panic, within its
// context, and with an answer of bounded size; what it takes is a job of
// type script or http whose config validates.
func FuzzDecodeDefinition(f *testing.F) {
	for _, s := range []string{
		"name: d\ncron: \"* * * * * *\"\nshardingTotalCount: 2\ntype: http\nhttp:\n  url: http://127.0.0.1:1/\n  timeout: 5s\n",
		"name: d\ncron: \"* * * * * *\"\nshardingTotalCount: 2\ntype: http\nhttp: {url: http://x/, method: PUT, body: \"{{.JSON}}\"}\n",
		"name: d\ncron: \"* * * * * *\"\nshardingTotalCount: 2\ntype: script\nscript:\n  command: [/bin/true]\n",
		"name: d\ncron: \"* * * * * *\"\nshardingTotalCount: 2\nhandler: orders\n",
		`{"name": "d", "cron": "* * * * * *", "shardingTotalCount": 2, "type": "http", "http": {"url": "http://x/"}}`,
		"name: d\ncron: \"* * * * * *\"\nshardingTotalCount: 2\ntype: http\nhttp: {url: http://x/, methd: GET}\n",
		"\xe9\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
		"\xe8\x00\x00\x01\x9a\x00\x00\x00\x00name: d\n",
		"{{{ not yaml",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Add(hostiledoc.SelfMerge("d"))
	f.Add(hostiledoc.MergeChain("d", 12))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sp, err := jobfile.DecodeDefinition(ctx, data)
		if err != nil {
			if !errors.Is(err, job.ErrInvalidConfig) && !errors.Is(err, jobfile.ErrInvalidJob) && !errors.Is(err, jobfile.ErrNotDefinable) {
				t.Fatalf("error %v wraps none of the decoder's sentinels", err)
			}
			if n := len(err.Error()); n > 2000+200*len(data) {
				t.Fatalf("error of %d bytes for a document of %d", n, len(data))
			}
			return
		}
		if ty := sp.TypeOrDefault(); ty != jobfile.TypeScript && ty != jobfile.TypeHTTP {
			t.Fatalf("definition of type %s taken", ty)
		}
		if err := sp.Config.Validate(); err != nil {
			t.Fatalf("definition taken with a config that does not validate: %v", err)
		}
	})
}

// fuzzLoadSeeds are documents with merges, anchors and aliases, good and
// bad: a job's document, and whole files.
var fuzzLoadSeeds = []string{
	"name: j\ncron: '* * * * * *'\nshardingTotalCount: 4\n",
	"name: j\n<<: &d {cron: '* * * * * *', shardingTotalCount: 3}\n",
	"name: j\n<<: [&a {cron: '* * * * * *'}, &b {shardingTotalCount: 2}]\ndescription: *a\n",
	"name: j\nx: &a {y: &b {<<: *a}}\n",
	"a: &a [*a]\n",
	"name: j\n<<: *missing\n",
	"[[[[[[[[[[]]]]]]]]]]",
	"name: j\ncron: '* * * * * *'\nshardingTotalCount: 4\n---\nname: k\n",
	"",
	"regcenter: {servers: [zk:2181]}\njobs:\n  - name: j\n    type: http\n    cron: '* * * * * *'\n    shardingTotalCount: 1\n    http: {url: 'http://x/'}\ntracing: {exporter: stdout}\n",
	"regcenter: {postgres: 'postgres://u@db/x', url: 'postgres://u@db/y'}\n",
}

// FuzzLoad: a job file decodes or is refused, without a panic.
func FuzzLoad(f *testing.F) {
	for _, s := range fuzzLoadSeeds {
		f.Add([]byte(s))
	}
	f.Add(hostiledoc.SelfMerge("j"))
	f.Add(hostiledoc.MergeChain("j", 12))
	f.Add([]byte("regcenter: {servers: [zk:2181]}\njobs:\n  - name: j\n    <<: &d {cron: '* * * * * *', shardingTotalCount: 2}\n  - {name: k, <<: *d}\n"))
	f.Add([]byte("regcenter: &r {servers: [zk:2181], namespace: x}\njobs: [{name: j, <<: *r}]\n"))
	for _, env := range regcenterEnvForTest {
		f.Setenv(env, "")
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := jobfile.Load(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, job.ErrInvalidConfig) && !strings.Contains(err.Error(), "regcenter") {
				t.Fatalf("error %v wraps neither ErrInvalidConfig nor a regcenter error", err)
			}
			return
		}
		for _, s := range file.Jobs {
			if err := s.Validate(); err != nil {
				t.Fatalf("loaded job %q does not validate: %v", s.Name, err)
			}
		}
	})
}
