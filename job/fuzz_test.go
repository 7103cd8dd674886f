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

// storedSeeds are values of every stored kind, good and bad: what the
// scheduler writes, values cut short, of the wrong type, out of range,
// and the header shapes of the etcd center (see regcenter's fuzz targets).
var storedSeeds = []string{
	`{"server":"s1","fire":1764547200000,"kind":"scheduled","begin":1764547200001,"end":1764547200002}`,
	`{"server":"s1","fire":1764547200000,"ran":[[1764547100000,1764547200000],[5,1]],"kind":"misfire","begin":1,"end":2,"error":"x"}`,
	`{"server":"s1","fire":9223372036854775807,"since":-1,"floor":-9223372036854775808}`,
	`{"server":"s1","fire":1764547200000,"ran":[[9223372036854775807,9223372036854775807]]}`,
	`{"server":"","fire":1,"kind":"scheduled","begin":1,"session":"0x1"}`,
	`{"since":1764547200000}`,
	`{"since":0}`,
	`{"since":"soon"}`,
	`{"servers":["a","b"],"joined":[1,2],"seq":2,"jobs":{"j":[1,2]},"unplaced":{"j":1}}`,
	`{"servers":["a"],"joined":[1],"seq":1,"jobs":{"j":[9223372036854775807],"k":[9223372036854775807]}}`,
	`{"servers":["a"],"joined":[1],"seq":1,"jobs":{"j":[1]},"unplaced":{"j":9223372036854775807,"k":9223372036854775807}}`,
	`{"servers":["a","a"],"joined":[1,1],"seq":1,"jobs":{}}`,
	`{"units":{"a":1}}`,
	`{"faultTolerance":1,"alarmThreshold":0,"slots":4,"freeSlots":2,"score":50}`,
	`{"faultTolerance":0,"score":101}`,
	"\xe9\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
	"\xe8\x00\x00\x01\x9a\x00\x00\x00\x00{}",
	"null",
	"[]",
	"",
}

// FuzzStoredValues: the load table and an instance entry, whatever their
// bytes, decode or are refused with their sentinel, without a panic; what
// decodes makes sense (DecodeStoredForTest). The records and marks are
// fuzzed in job/internal/stored (FuzzDecode); their seeds stay here as
// values of the wrong shape.
func FuzzStoredValues(f *testing.F) {
	for _, s := range storedSeeds {
		for k := range job.StoredKinds {
			f.Add(uint8(k), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		k := job.StoredKinds[int(kind)%len(job.StoredKinds)]
		if _, problem := job.DecodeStoredForTest(k, data); problem != nil {
			t.Fatalf("%s %q: %v", k, data, problem)
		}
	})
}
