package job_test

import (
	"context"
	"errors"
	"testing"

	"github.com/shardjob/shardjob/internal/testing/hostiledoc"
	"github.com/shardjob/shardjob/job"
)

// fuzzSeeds are documents with merges, anchors and aliases, good and bad.
var fuzzSeeds = []string{
	"name: j\ncron: '* * * * * *'\nshardingTotalCount: 4\n",
	"name: j\ncron: '@every 5s'\nshardingTotalCount: 2\nshardingItemParameters: 0=a,1=b\njobParameter: p\nfailover: true\nmisfire: skip\nmonitorExecution: false\nmaxTimeDiff: 5s\nreconcileInterval: 1m\nshardingStrategy: ROUND_ROBIN\ndescription: d\ndisabled: true\noverwrite: true\n",
	"name: j\n<<: &d {cron: '* * * * * *', shardingTotalCount: 3}\n",
	"name: j\n<<: [&a {cron: '* * * * * *'}, &b {shardingTotalCount: 2}]\ndescription: *a\n",
	"name: &n j\ncron: '* * * * * *'\nshardingTotalCount: 1\ndescription: *n\n",
	"name: j\n<<: &a {cron: \"* * * * * *\", <<: *a}\nshardingTotalCount: 6\n",
	"name: j\nx: &a {y: &b {<<: *a}}\n",
	"a: &a [*a]\n",
	"name: j\n<<: *missing\n",
	"[[[[[[[[[[]]]]]]]]]]",
	"name: j\ncron: '* * * * * *'\nshardingTotalCount: 4\n---\nname: k\n",
	"",
}

func addFuzzSeeds(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Add(hostiledoc.SelfMerge("j"))
	f.Add(hostiledoc.MergeChain("j", 12))
}

// FuzzDecodeConfig: any document decodes or is refused, without a panic
// and with an answer of bounded size; a document that decodes encodes to
// one that decodes to the same Config.
func FuzzDecodeConfig(f *testing.F) {
	addFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c, err := job.DecodeConfigContext(ctx, data)
		if err != nil {
			if !errors.Is(err, job.ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			if c != (job.Config{}) {
				t.Fatalf("error %v with a non-zero Config %+v", err, c)
			}
			// Each problem is reported once, values cut short: the
			// answer cannot be much larger than the document.
			if n := len(err.Error()); n > 2000+200*len(data) {
				t.Fatalf("error of %d bytes for a document of %d", n, len(data))
			}
			return
		}
		doc, err := c.Encode()
		if err != nil {
			t.Fatalf("decoded config %+v does not encode: %v", c, err)
		}
		again, err := job.DecodeConfig(doc)
		if err != nil {
			t.Fatalf("encoded document does not decode: %v\n%s", err, doc)
		}
		if again != c {
			t.Fatalf("round trip changed the config:\n%+v\n%+v", c, again)
		}
		if len(doc) > job.MaxConfigBytes {
			t.Fatalf("encoded document of %d bytes", len(doc))
		}
	})
}
