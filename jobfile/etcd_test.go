package jobfile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
	_ "github.com/shardjob/shardjob/regcenter/etcd" // jobfile.Run opens etcd through regcenter.Open
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// TestRunOnEtcd: a file whose regcenter section names etcd endpoints runs
// its jobs on etcd through jobfile.Run, as `shardjob run FILE` does.
func TestRunOnEtcd(t *testing.T) {
	etcd := etcdtest.Start(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "runs")
	sh := writeScript(t, dir, "record.sh", `eval "ctx=\${$#}"; printf '%s\n' "$ctx" >> "$1"`+"\n")
	doc := fmt.Sprintf(`regcenter:
  etcd: [%s]
  namespace: %s
  sessionTimeout: 4s
jobs:
  - name: report
    type: script
    cron: "* * * * * *"
    shardingTotalCount: 2
    script:
      command: [%s, %s]
`, etcd.ConnectString(), namespace(), sh, log)
	path := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := jobfile.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Regcenter.Etcd) != 1 || len(f.Regcenter.Servers) != 0 {
		t.Fatalf("regcenter %+v: want the etcd endpoint only", f.Regcenter)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- jobfile.Run(ctx, f, jobfile.RunOptions{Options: jobfile.Options{StateDir: filepath.Join(dir, "state"), Logger: testlog.Logger(t)},
			ServerID: "e1", ShutdownTimeout: 10 * time.Second})
	}()
	waitFor(t, "a fire of both items on etcd", 60*time.Second, func() bool {
		items := map[time.Time]int{}
		for _, c := range runs(t, log) {
			if c.Kind == string(job.KindFire) && c.ServerID == "e1" {
				items[c.FireTime]++
				if items[c.FireTime] == 2 {
					return true
				}
			}
		}
		return false
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of its context ending")
	}
}
