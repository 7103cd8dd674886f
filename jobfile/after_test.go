package jobfile_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
)

// A file's jobs are checked together (job.CheckDependencies): a cycle is
// named; a parent must be in the file and on the same schedule. The
// problems name the jobs as the file's other problems do.
func TestLoadChecksDependencies(t *testing.T) {
	clearRegcenterEnvForTest(t)
	doc := func(jobs ...string) string {
		return "regcenter:\n  servers: [127.0.0.1:2181]\n  namespace: t\njobs:\n" + strings.Join(jobs, "")
	}
	j := func(name, cron, after string) string {
		s := fmt.Sprintf("  - name: %s\n    cron: %q\n    shardingTotalCount: 1\n", name, cron)
		if after != "" {
			s += "    after: [" + after + "]\n"
		}
		return s
	}
	for _, tc := range []struct {
		name string
		doc  string
		want string
	}{
		{"cycle", doc(j("a", "* * * * * *", "c"), j("b", "* * * * * *", "a"), j("c", "* * * * * *", "b")), "a cycle: a → b → c → a"},
		{"unknown parent", doc(j("b", "* * * * * *", "a")), `jobs[0] "b": after "a": no job "a" here`},
		{"other schedule", doc(j("a", "*/2 * * * * *", ""), j("b", "* * * * * *", "a")), `jobs[1] "b": after "a": job "a" fires on other times than this job (cron "*/2 * * * * *" there, "* * * * * *" here)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jobfile.Load(strings.NewReader(tc.doc))
			if !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want %q", err, tc.want)
			}
		})
	}
	if f, err := jobfile.Load(strings.NewReader(doc(j("a", "* * * * * *", ""), j("b", "* * * * * *", "a"), j("c", "* * * * * *", "a, b")))); err != nil || f.Jobs[2].After != "a,b" {
		t.Fatalf("a valid chain: %v", err)
	}
}

// The YAML example of schedules loads: every key of it is known and valid,
// the chain included.
func TestAfterYAMLExampleLoads(t *testing.T) {
	clearRegcenterEnvForTest(t)
	f, err := jobfile.LoadFile(filepath.Join("..", "example", "yaml", "schedules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Jobs) != 6 || f.Jobs[5].After != "extract,transform" || f.Jobs[0].Overlap != job.OverlapReplace || f.Jobs[1].Overlap != job.OverlapAllow {
		t.Fatalf("loaded %+v", f.Jobs)
	}
}
