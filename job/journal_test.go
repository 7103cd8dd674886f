package job_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

// A crashed process's completion journal is folded into the records that
// name it, and deleted: a records it ran into its journal and crashes
// before it writes them; b, which runs the same job, folds the journal
// once it is old enough (shortened here), and the record then lists every
// fire a's journal did, and no longer names it.
func TestClusterAJournalLeftByACrashIsFoldedIntoTheRecords(t *testing.T) {
	ns := namespace(t)
	rec := newRecorder()
	obs := observer(t, ns)
	cfg := everySecond("fold", 1)
	cfg.ReconcileInterval = time.Second
	start := time.Now()
	a := startInstance(t, ns, "a", cfg, rec)
	rec.waitFires(t, start, 4, 1, 30*time.Second)
	journals, err := obs.Children(tctx(t), "/.journals")
	if err != nil || len(journals) != 1 {
		t.Fatalf("journals %v (%v), want a's", journals, err)
	}
	a.crash(t)
	var ranOnA time.Time
	for _, r := range rec.snapshot() {
		if r.server == "a" && r.through.After(ranOnA) {
			ranOnA = r.through
		}
	}
	type mark struct {
		Fire    int64  `json:"fire"`
		Journal string `json:"journal"`
	}
	read := func() mark {
		data, _, err := obs.Get(tctx(t), "/fold/execution/0/completed")
		if err != nil {
			t.Fatal(err)
		}
		var m mark
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := read(); m.Journal != journals[0] || time.UnixMilli(m.Fire).Equal(ranOnA) {
		t.Fatalf("after the crash the record names journal %q and lists fires through %s: want it to name a's journal %q, behind a's last run %s",
			m.Journal, time.UnixMilli(m.Fire).Format("15:04:05"), journals[0], ranOnA.Format("15:04:05"))
	}
	// b runs the job too, folding what it finds at its first reconcile
	// round (the journal's age shortened to nothing).
	startInstance(t, ns, "b", cfg, rec, job.WithJournalSweepForTest(0, 0))
	waitUntil(t, 30*time.Second, func() bool {
		left, err := obs.Children(tctx(t), "/.journals")
		if err != nil {
			return false
		}
		for _, id := range left {
			if id == journals[0] {
				return false
			}
		}
		return true
	})
	m := read()
	if m.Journal == journals[0] || time.UnixMilli(m.Fire).Before(ranOnA) {
		t.Errorf("after the fold the record names journal %q and lists fires through %s; a ran through %s",
			m.Journal, time.UnixMilli(m.Fire).Format("15:04:05"), ranOnA.Format("15:04:05"))
	}
}
