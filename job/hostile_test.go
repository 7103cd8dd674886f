package job_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/internal/testing/hostiledoc"
	"github.com/shardjob/shardjob/job"
)

// hostileDocs are documents that crashed or stalled every reader: each is
// refused at once with an error naming the problem.
var hostileDocs = []struct {
	name string
	doc  []byte
	kind error
	want string
}{
	{"self merge", hostiledoc.SelfMerge("j"), job.ErrInvalidConfig, hostiledoc.StoredSelfMergeError},
	{"merge chain of 40 levels", hostiledoc.MergeChain("j", 40), job.ErrInvalidConfig, hostiledoc.StoredMergeChainError},
	{"merge cycle through two anchors", []byte("name: j\nx: &a {y: &b {<<: *a}}\n"), job.ErrInvalidConfig, "line 2: an anchor (&) is not supported"},
	{"alias inside its anchor", []byte("name: j\ndescription: &a [1, *a]\n"), job.ErrInvalidConfig, "line 2: an anchor (&) is not supported"},
	{"deep nesting of lists", []byte("name: j\ndescription: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n"), job.ErrInvalidConfig, "line 2: a flow collection ([) inside a flow collection is not supported"},
	{"deep nesting", []byte("name: j\ndescription:\n" + deepMapping(200)), job.ErrConfigTooComplex, "nests deeper than 64 levels"},
	{"too large", append([]byte("name: j\ndescription: "), bytes.Repeat([]byte("x"), job.MaxDocumentBytes)...), job.ErrConfigTooLarge, "bytes over the limit of 4,194,304"},
}

// deepMapping is levels of mappings, each the value of the one before.
func deepMapping(levels int) string {
	var b strings.Builder
	for i := range levels {
		b.WriteString(strings.Repeat(" ", i+1) + "a:\n")
	}
	return b.String()
}

func TestMergeChainIsAboutOneKilobyte(t *testing.T) {
	if n := len(hostiledoc.MergeChain("j", 40)); n < 800 || n > 1300 {
		t.Fatalf("MergeChain(40) is %d bytes, want about 1 KB", n)
	}
}

func TestDecodeConfigRejectsHostileYAML(t *testing.T) {
	for _, tt := range hostileDocs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := job.DecodeConfig(tt.doc)
			checkHostileError(t, err, tt.kind, tt.want)
		})
	}
}

func checkHostileError(t *testing.T, err error, kind error, want string) {
	t.Helper()
	if err == nil {
		t.Fatal("accepted")
	}
	if !errors.Is(err, job.ErrInvalidConfig) || !errors.Is(err, kind) {
		t.Errorf("error %v does not wrap ErrInvalidConfig and %v", err, kind)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if len(err.Error()) > 1000 {
		t.Errorf("error is %d bytes long", len(err.Error()))
	}
}

func TestConfigValidateNamesOversizedField(t *testing.T) {
	base := job.Config{Name: "big", Cron: "* * * * * *", ShardingTotalCount: 10000}
	items := hostiledoc.ItemParameters(10000, 1_260_000)
	tests := []struct {
		name string
		edit func(c *job.Config)
		want []string
	}{
		{"shardingItemParameters of 1.26 MB", func(c *job.Config) { c.ShardingItemParameters = items },
			[]string{"shardingItemParameters is ", " bytes over the limit of 1,044,480"}},
		{"jobParameter of 2 MB", func(c *job.Config) { c.JobParameter = strings.Repeat("p", 2<<20) },
			[]string{"jobParameter is 2,097,152 bytes", "1,052,672 bytes over the limit of 1,044,480"}},
		{"description of 1.1 MB", func(c *job.Config) { c.Description = strings.Repeat("d", 1_100_000) },
			[]string{"description is 1,100,000 bytes", "55,520 bytes over"}},
		{"whole document", func(c *job.Config) {
			c.JobParameter = strings.Repeat("p", 400_000)
			c.Description = strings.Repeat("d", 400_000)
			c.ShardingItemParameters = hostiledoc.ItemParameters(10000, 400_000)
		}, []string{"the encoded config document is ", " bytes over the limit of 1,044,480"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.edit(&c)
			err := c.Validate()
			if !errors.Is(err, job.ErrConfigTooLarge) || !errors.Is(err, job.ErrInvalidConfig) {
				t.Fatalf("Validate = %v, want ErrConfigTooLarge", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if len(err.Error()) > 1000 {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
			if _, err := c.Encode(); !errors.Is(err, job.ErrConfigTooLarge) {
				t.Errorf("Encode = %v, want ErrConfigTooLarge", err)
			}
		})
	}
}

// TestDecodeConfigNamesOversizedField: a document too large to store, but
// small enough to read, is answered with the field at fault.
func TestDecodeConfigNamesOversizedField(t *testing.T) {
	doc := "name: big\ncron: '* * * * * *'\nshardingTotalCount: 4\njobParameter: " + strings.Repeat("p", 2<<20) + "\n"
	_, err := job.DecodeConfig([]byte(doc))
	if !errors.Is(err, job.ErrConfigTooLarge) || !strings.Contains(err.Error(), "jobParameter is 2,097,152 bytes") ||
		!strings.Contains(err.Error(), "at line 4") {
		t.Fatalf("DecodeConfig = %v", err)
	}
}

func TestConfigLargestValueRoundTrips(t *testing.T) {
	c := job.Config{Name: "big", Cron: "* * * * * *", ShardingTotalCount: 1}
	c.JobParameter = strings.Repeat("p", job.MaxConfigBytes-400)
	doc, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := job.DecodeConfig(doc)
	if err != nil || got != c {
		t.Fatalf("round trip: %v", err)
	}
}

// TestDecodeConfigContextEnds: decoding gives up when its context ends.
func TestDecodeConfigContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	doc := "name: j\ncron: '* * * * * *'\nshardingTotalCount: 1\ndescription: [" + strings.Repeat("x, ", 5000) + "x]\n"
	_, err := job.DecodeConfigContext(ctx, []byte(doc))
	if !errors.Is(err, context.Canceled) || !errors.Is(err, job.ErrInvalidConfig) {
		t.Fatalf("DecodeConfigContext with an ended context = %v", err)
	}
}
