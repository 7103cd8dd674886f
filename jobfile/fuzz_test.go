package jobfile_test

import (
	"context"
	"errors"
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
		if ty := sp.TypeOrDefault(); ty != job.TypeScript && ty != job.TypeHTTP {
			t.Fatalf("definition of type %s taken", ty)
		}
		if err := sp.Config.Validate(); err != nil {
			t.Fatalf("definition taken with a config that does not validate: %v", err)
		}
	})
}
