package records

import (
	"log/slog"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// TestReaderOnARealRegistry: no node reads as nothing; a record reads
// with its version; one naming another process's journal adds that
// journal's entry for the item, one naming this process's does not; a
// value that does not decode is reported and reads as no completion.
func TestReaderOnARealRegistry(t *testing.T) {
	ctx, rc := roomtest.ZooKeeper(t, "records")
	paths := layout.Job("j")
	var reported []string
	rd := &Reader{Center: rc, Paths: paths, Job: "j", Own: "me", Log: slog.New(slog.DiscardHandler),
		Report: func(p string, _ regcenter.Stat, _ []byte, _ string, _ ...any) { reported = append(reported, p) }}
	sched := cron.Every(time.Second) // a fire every second
	sec := func(s int64) int64 { return s * 1000 }

	if rec, err := rd.Node(ctx, 0, sched); err != nil || rec.Versioned || !rec.Through().IsZero() {
		t.Fatalf("no node: %+v, %v; want nothing", rec, err)
	}
	write := func(item int, m stored.Completed) {
		t.Helper()
		p := paths.ItemNode(item, layout.Completed)
		if err := rc.EnsurePath(ctx, paths.Item(item)); err != nil {
			t.Fatal(err)
		}
		if _, err := rc.Create(ctx, p, m.Marshal(), regcenter.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	write(1, stored.Completed{Server: "a", Fire: sec(10), Ran: [][2]int64{{sec(10), sec(10)}}, Journal: "other"})
	write(2, stored.Completed{Server: "a", Fire: sec(10), Ran: [][2]int64{{sec(10), sec(10)}}, Journal: "me"})
	var doc stored.Journal
	doc.Put("j", 1, [][2]int64{{sec(11), sec(12)}})
	doc.Put("j", 2, [][2]int64{{sec(11), sec(12)}})
	for _, id := range []string{"other", "me"} {
		if err := rc.EnsurePath(ctx, layout.Journals); err != nil {
			t.Fatal(err)
		}
		if _, err := rc.Create(ctx, layout.Journal(id), doc.Encode(), regcenter.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := rd.Node(ctx, 1, sched)
	if err != nil || !rec.Foreign || !rec.Through().Equal(time.UnixMilli(sec(12))) || rec.Version != 0 {
		t.Fatalf("a record naming another journal: %+v, %v; want through 12 s, foreign", rec, err)
	}
	rec, err = rd.Node(ctx, 2, sched)
	if err != nil || rec.Foreign || !rec.Through().Equal(time.UnixMilli(sec(10))) {
		t.Fatalf("a record naming this process's journal: %+v, %v; want through 10 s as written", rec, err)
	}
	if !rd.Foreign("other") || rd.Foreign("me") || rd.Foreign("") {
		t.Fatal("Foreign disagrees with Own")
	}

	if err := rc.EnsurePath(ctx, paths.Item(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Create(ctx, paths.ItemNode(3, layout.Completed), []byte("{garbage"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	rec, err = rd.Node(ctx, 3, sched)
	if err != nil || !rec.Versioned || !rec.Through().IsZero() || len(reported) != 1 {
		t.Fatalf("garbage: %+v, %v, reported %v; want the version, no completion, one report", rec, err, reported)
	}
}
