package job_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/internal/yamldoc"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
)

// The stored document is read by internal/docsubset, not by a YAML
// library. yamlV3Decode reads it as before, through go.yaml.in/yaml/v3
// (yamldoc.Parse) and the job file's DecodeConfigNode: every document the
// subset accepts must decode to the same Config as there.

func init() {
	job.JobFileForTest = func(file []byte) ([]job.Config, error) {
		root, perr := yamldoc.Parse(context.Background(), file, yamldoc.Limits{Bytes: 64 << 20, Depth: job.MaxYAMLDepth, Budget: job.YAMLNodeBudget})
		if perr != nil {
			return nil, perr
		}
		pairs, _ := yamldoc.Pairs(root, job.MaxYAMLDepth)
		var jobs []job.Config
		for _, n := range pairs[0].Value.Content {
			j, err := jobfile.DecodeConfigNode(n, jobfile.NodeOptions{Place: func(name string) string { return "jobs " + name }})
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, j)
		}
		return jobs, nil
	}
}

func yamlV3Decode(data []byte) (job.Config, error) {
	root, perr := yamldoc.Parse(context.Background(), data, yamldoc.Limits{Bytes: job.MaxDocumentBytes, Depth: job.MaxYAMLDepth, Budget: job.YAMLNodeBudget})
	if perr != nil {
		return job.Config{}, perr
	}
	if root == nil {
		return job.Config{}, errors.New("document is empty")
	}
	return jobfile.DecodeConfigNode(root, jobfile.NodeOptions{})
}

// olderDocs are documents as Encode wrote them, every key of the document
// among them, and by hand within the subset.
var olderDocs = []string{
	"name: j\ncron: '*/2 * * * * *'\ntimeZone: Asia/Shanghai\nshardingTotalCount: 3\nitemsPerShard: 2\nshardingItemParameters: 0=a,1=b\n" +
		"jobParameter: 'quoted: ''yes'''\nfailover: true\nmisfire: \"\"\noverlap: replace\nmonitorExecution: true\nrecordInterval: 20s\n" +
		"maxTimeDiff: 5s\nreconcileInterval: 1m0s\nshardingStrategy: ROUND_ROBIN\ntimeout: 30s\nstart: \"2026-12-01T08:00:00Z\"\n" +
		"end: \"2027-12-01T08:00:00Z\"\nlimit: 10\nexclude: sat,sun\njitter: 300ms\nstartingDeadline: 10s\npausedUntil: \"2026-12-02T08:00:00Z\"\n" +
		"pauseNote: upgrade\ndescription: |-\n    nightly\n    export\ndisabled: false\noverwrite: true\nretry:\n    attempts: 3\n" +
		"    backoff: 1s\n    maxBackoff: 30s\n    jitter: 0.2\nalert:\n    late: 30s\n    notRunFor: 1h0m0s\n",
	"name: c\ncron: 0 0 * * * *\ntimeZone: \"\"\nshardingTotalCount: 1\nshardingItemParameters: \"\"\njobParameter: \"\"\nfailover: false\n" +
		"misfire: \"\"\nmonitorExecution: true\nmaxTimeDiff: 0s\nreconcileInterval: 0s\nshardingStrategy: \"\"\nafter: p\n" +
		"onParentFailure: skip\nafterTimeout: 1m0s\ndescription: \"\"\ndisabled: false\noverwrite: false\n",
	"---\n# by hand\nname: \"j\"   # the name\ncron: \"@every 5s\"\nshardingTotalCount: 0x2\nexclude:\n  - sat\n  - sun\nfailover: True\n...\n",
	"name: j\ncron: '@hourly'\nshardingTotalCount: 2\nretry:\n  attempts: 2\n  jitter: 1\nalert:\n",
	"name: j\ncron: '@hourly'\nshardingTotalCount: 2\nafter:\n- a\n- b\n",
	"name: j\ncron: '@hourly'\nshardingTotalCount: 2\nstart: 2026-12-01\nlimit: 1_000\n",
	"name: j\ncron: '@hourly'\nshardingTotalCount: 2\nfailover: yes\n",
	"name: j\ncron: '@hourly'\nshardingTotalCount: 18446744073709551615\n",
	"name: j\ncron: '@hourly'\nshardingTotalCount: 2\nretry:\n  attempts: 2\n  jitter: .nan\n",
	"name: j\ncron: '@hourly'\nshardingTotalCount: 2\nnme: x\n",
	"name: j\ncron: '@hourly'\nshardingTotalCount: 2\nname: k\n",
	"name: j\ncron: '@hourly'\nshardingTotalCount: 2\ndescription: ~\n",
	"name: j\ncron: '@hourly'\nshardingTotalCount: 2\ndescription: !!binary aGVsbG8=\n",
	"name: j\ncron: '@hourly'\nshardingTotalCount: 2\ntimeout: 5\n",
}

// checkSubset checks data against yaml/v3's reading of it.
func checkSubset(t *testing.T, data []byte) {
	t.Helper()
	c, err := job.DecodeConfig(data)
	if err != nil {
		if !errors.Is(err, job.ErrInvalidConfig) || c != (job.Config{}) {
			t.Fatalf("%q: error %v (config %+v)", data, err, c)
		}
		return
	}
	v3, verr := yamlV3Decode(data)
	if verr != nil {
		t.Fatalf("%q: accepted as %+v; yaml/v3 refuses it: %v", data, c, verr)
	}
	if c != v3 {
		t.Fatalf("%q:\n subset  %+v\n yaml/v3 %+v", data, c, v3)
	}
}

func TestDecodeConfigMatchesYAML(t *testing.T) {
	for _, d := range append(olderDocs, fuzzSeeds...) {
		checkSubset(t, []byte(d))
	}
	// The documents of older versions decode, and their errors read as
	// they did.
	for i, d := range olderDocs[:6] {
		if _, err := job.DecodeConfig([]byte(d)); err != nil {
			t.Errorf("document %d: %v", i, err)
		}
	}
	for _, tc := range []struct{ doc, want string }{
		{olderDocs[9], `job "j": unknown key "nme" at line 4 (did you mean "name"?)`},
		{olderDocs[10], `job "j": key "name" at line 4: repeats the key at line 1`},
		{olderDocs[7], `job "j": shardingTotalCount at line 3: 18446744073709551615 is out of range`},
		{"name: j\ncron: '@hourly'\nshardingTotalCount: 2\nx: &a 1\n", `config: invalid YAML at line 4: an anchor (&) is not supported in a config document`},
		{"name: j\n\tcron: x\n", `config: invalid YAML at line 2: a tab as indentation is not supported in a config document`},
		{"name: j\ncron: '@hourly'\nshardingTotalCount: 2\nretry: {attempts: 3, backoff: [1s]}\n", `config: invalid YAML at line 4: a flow collection ([) inside a flow collection is not supported in a config document`},
	} {
		_, err := job.DecodeConfig([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %s", tc.doc, err, tc.want)
		}
	}
}

// TestEncodedDocumentsReadAlike: documents Encode writes for values of
// every style read back, and as yaml/v3 reads them.
func TestEncodedDocumentsReadAlike(t *testing.T) {
	base := job.Config{Name: "j", Cron: "@every 5s", ShardingTotalCount: 2}
	for _, s := range []string{"", "x", "a b", " lead", "trail ", "yes", "1.5", "2026-12-01", "#c", "a: b", "é", "line\nbreak", "tab\there",
		"ends\n", "\nstarts", "q'\"", "\\", "\x01", "\u2028", "\xff\xfe", "- x", "[x]", "{x}", "&a", "*a", "!t", "|", ">", "%", "@", "`"} {
		c := base
		c.Description, c.JobParameter = s, s
		data, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		checkSubset(t, data)
		got, err := job.DecodeConfig(data)
		if err != nil && !strings.ContainsAny(s, "\u2028") {
			t.Errorf("%q: %v\n%s", s, err, data)
		} else if err == nil && got != c {
			t.Errorf("%q: read %+v", s, got)
		}
	}
}

// FuzzDecodeConfigSubset: what the subset accepts, yaml/v3 reads as the
// same Config; what it refuses, it refuses with an error, not a panic.
func FuzzDecodeConfigSubset(f *testing.F) {
	for _, d := range append(olderDocs, fuzzSeeds...) {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSubset(t, data)
	})
}
