package jobfile_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/internal/testing/hostiledoc"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
)

// hostileDocs are documents that crashed or stalled every reader: each is
// refused at once with an error naming the problem, as package job's
// DecodeConfig refuses them.
var hostileDocs = []struct {
	name string
	doc  []byte
	kind error
	want string
}{
	{"self merge", hostiledoc.SelfMerge("j"), job.ErrConfigTooComplex, hostiledoc.SelfMergeError},
	{"merge chain of 40 levels", hostiledoc.MergeChain("j", 40), job.ErrConfigTooComplex, hostiledoc.MergeChainError},
	{"merge cycle through two anchors", []byte("name: j\nx: &a {y: &b {<<: *a}}\n"), job.ErrConfigTooComplex, "merge key at line 2 refers to itself"},
	{"alias inside its anchor", []byte("name: j\ndescription: &a [1, *a]\n"), job.ErrConfigTooComplex, "alias *a at line 2 refers to itself"},
	{"deep nesting", []byte("name: j\ndescription: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n"), job.ErrConfigTooComplex, "nests deeper than 64 levels"},
	{"too large", append([]byte("name: j\ndescription: "), bytes.Repeat([]byte("x"), job.MaxDocumentBytes)...), job.ErrConfigTooLarge, "bytes over the limit of 4,194,304"},
}

func TestLoadRejectsHostileYAML(t *testing.T) {
	clearRegcenterEnvForTest(t)
	for _, tt := range hostileDocs {
		if tt.kind == job.ErrConfigTooLarge {
			continue // a file may be larger: see TestLoadRefusesOversizedFile
		}
		t.Run(tt.name, func(t *testing.T) {
			// The document as a job of a file, and as a whole file.
			file := "regcenter: {servers: [zk:2181]}\njobs:\n  - " + strings.ReplaceAll(string(tt.doc), "\n", "\n    ") + "\n"
			_, err := jobfile.Load(strings.NewReader(file))
			checkHostileError(t, err, tt.kind, strings.ReplaceAll(tt.want, "line 2", "line 4"))

			path := filepath.Join(t.TempDir(), "jobs.yaml")
			if err := os.WriteFile(path, tt.doc, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = jobfile.LoadFile(path)
			checkHostileError(t, err, tt.kind, tt.want)
		})
	}
}

func TestLoadRefusesOversizedFile(t *testing.T) {
	_, err := jobfile.Load(strings.NewReader("jobs: []\n# " + strings.Repeat("x", jobfile.MaxFileBytes)))
	checkHostileError(t, err, job.ErrConfigTooLarge, "larger than the limit of 67,108,864 bytes")
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

// TestLoadMergesWithinBudget keeps legitimate merges working: many jobs
// sharing defaults through a merge key.
func TestLoadMergesWithinBudget(t *testing.T) {
	clearRegcenterEnvForTest(t)
	var b strings.Builder
	b.WriteString("regcenter: {servers: [zk:2181]}\ndefaults: &d {cron: \"* * * * * *\", shardingTotalCount: 4, description: shared}\njobs:\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "  - {name: job-%d, <<: *d}\n", i)
	}
	_, err := jobfile.Load(strings.NewReader(b.String()))
	// defaults is not a known top-level key; everything else decodes.
	if err == nil || !errors.Is(err, job.ErrUnknownKey) || strings.Contains(err.Error(), "problems") {
		t.Fatalf("want exactly the unknown key defaults, got %v", err)
	}
}
