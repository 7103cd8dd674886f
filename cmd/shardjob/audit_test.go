package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/job"
)

// TestAuditedCommandsSQLite and ...Postgres: the steering commands write
// who did what to the trail of the history database they are given, the
// failed ones too; "shardjob audit" reads it with its filters; a command
// whose entry cannot be written is not performed.
func TestAuditedCommandsSQLite(t *testing.T) {
	testAuditedCommands(t, history.DriverSQLite, filepath.Join(t.TempDir(), "audit.db"))
}

func TestAuditedCommandsPostgres(t *testing.T) {
	dsn := pgtest.NewDatabaseT(t)
	testAuditedCommands(t, history.DriverPostgres, dsn)
}

func testAuditedCommands(t *testing.T, driver, dsn string) {
	c := newCluster(t, job.Config{Name: "orders", Cron: "0 0 0 1 1 *", ShardingTotalCount: 3}, "")
	db := []string{"--history-driver", driver, "--history-dsn", dsn}
	waitFor(t, 30*time.Second, "three servers online", func() bool {
		st := c.status()
		return len(st.Servers) == 3 && st.Servers[0].Online && st.Servers[1].Online && st.Servers[2].Online
	})

	c.mustCLI(append([]string{"disable", "s2", "--job", "orders", "--as", "alice"}, db...)...)
	c.mustCLI(append([]string{"trigger", "orders", "--server", "s1", "--as", "bob"}, db...)...)
	c.mustCLI(append([]string{"disable-item", "orders", "1", "2", "--as", "alice"}, db...)...)
	c.wantFail(exitUnknown, []string{"nope"}, append([]string{"trigger", "nope", "--as", "bob"}, db...)...)
	// Reads are not audited; nor is a command without a history database.
	c.mustCLI("status", "orders")
	c.mustCLI("enable", "s2", "--job", "orders", "--as", "carol")

	code, out, errOut := runCLI(append([]string{"audit", "-o", "json"}, db...)...)
	if code != 0 {
		t.Fatalf("audit: exit %d: %s", code, errOut)
	}
	var p history.AuditPage
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(p.Entries) != 4 {
		t.Fatalf("%d entries, want 4: %+v", len(p.Entries), p.Entries)
	}
	host, _ := os.Hostname()
	failed, items, trig, dis := p.Entries[0], p.Entries[1], p.Entries[2], p.Entries[3]
	if dis.Who != "alice" || dis.Op != "disable" || dis.Server != "s2" || dis.Job != "orders" || dis.Result != history.AuditOK ||
		dis.Via != "cli" || dis.Remote != host {
		t.Errorf("disable: %+v", dis)
	}
	if trig.Who != "bob" || trig.Op != "trigger" || trig.Job != "orders" || trig.Server != "s1" || trig.Result != history.AuditOK {
		t.Errorf("trigger: %+v", trig)
	}
	if items.Op != "disable-items" || items.Items != "1,2" || items.Result != history.AuditOK {
		t.Errorf("disable-item: %+v", items)
	}
	if failed.Job != "nope" || failed.Result != history.AuditFailed || !strings.Contains(failed.Error, "nope") {
		t.Errorf("the failed trigger: %+v", failed)
	}

	code, out, errOut = runCLI(append([]string{"audit", "--who", "alice", "--since", "1h"}, db...)...)
	if code != 0 || !strings.Contains(out, "disable-items") || !strings.Contains(out, "server s2") || strings.Contains(out, "bob") {
		t.Errorf("audit --who alice: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(append([]string{"audit", "--job", "nope", "--limit", "1"}, db...)...)
	if code != 0 || !strings.Contains(out, "failed") || strings.Contains(out, "alice") {
		t.Errorf("audit --job nope: exit %d\n%s", code, out)
	}
	code, _, errOut = runCLI(append([]string{"audit", "--limit", "0"}, db...)...)
	if code != exitUsage || !strings.Contains(errOut, "--limit") {
		t.Errorf("audit --limit 0: exit %d: %s", code, errOut)
	}

	if driver != history.DriverSQLite {
		return
	}
	// An audit database that cannot be written: the command is refused
	// and nothing changes.
	bad := filepath.Join(t.TempDir(), "no-such-dir", "audit.db")
	errLine := c.wantFail(exitFailed, []string{"not performed", "audit trail cannot be written"},
		"disable", "s3", "--job", "orders", "--history-dsn", bad)
	if strings.Contains(errLine, "disabled") {
		t.Errorf("stderr: %s", errLine)
	}
	if serverOf(c.status(), "s3").Disabled {
		t.Errorf("s3 was disabled though its audit entry could not be written")
	}
}
