package marks

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// steadyLease is a lease clock whose lease never runs out: the test ends
// and starts generations itself.
type steadyLease struct{}

func (steadyLease) LeaseLeft() time.Duration     { return time.Hour }
func (steadyLease) SinceRead() time.Duration     { return 0 }
func (steadyLease) LeaseDuration() time.Duration { return time.Hour }
func (steadyLease) Backend() string              { return "test" }

// generations returns three sessions of id: two generations of it, the
// first ended, the second live; and one of another id.
func generations(t *testing.T, id int64) (ended, live, stranger *regcenter.Session) {
	t.Helper()
	k := regcenter.NewSessionKeeper(slog.New(slog.DiscardHandler), "test", steadyLease{})
	k.Established(id)
	ended = k.Current()
	k.Lose(regcenter.ErrSessionLost)
	k.Established(id)
	live = k.Current()
	if ended == live || ended.ID() != live.ID() || ended.Err() == nil || live.Err() != nil {
		t.Fatalf("sessions %v and %v: want two generations of one id, the first ended", ended, live)
	}
	k.Close()
	o := regcenter.NewSessionKeeper(slog.New(slog.DiscardHandler), "test", steadyLease{})
	o.Established(id + 1)
	stranger = o.Current()
	return ended, live, stranger
}

// TestEndedRemovesWhatAnEndedGenerationLeft: a registry session that lived
// on under a later generation owns the running marks and failover claims
// its ended generation made. The sweep before the job registers again
// removes them — a mark naming the ended generation, one whose value it
// cannot read, a claim — and leaves the live generation's mark, another
// session's, and the mark of an item a run of the ended generation still
// holds; that one goes once its run has completed (AfterRun). A sweep
// after a new session id, or at the first registration, reads nothing.
// (The loss it answers: an item run here by failover, its completion
// refused by the fence as the generation ended, its owner's fires meeting
// the mark for good.)
func TestEndedRemovesWhatAnEndedGenerationLeft(t *testing.T) {
	zc := zktest.Start(t)
	rc, other := roomtest.Open(t, zc.Servers(), "ended"), roomtest.Open(t, zc.Servers(), "ended")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ended, live, stranger := generations(t, rc.Session().ID())
	paths := layout.Job("ended")
	mark := func(s *regcenter.Session) []byte {
		m := stored.Running{Server: "me", Fire: 1_000, Kind: "fire", Begin: 1_000, Session: s.String()}
		return m.Marshal()
	}
	const (
		stale    = 0 // the ended generation's mark: removed
		current  = 1 // the live generation's: kept
		running  = 2 // the ended generation's, its run still going: kept, then removed after it
		foreign  = 3 // another session's: kept
		claimed  = 4 // the ended generation's claim: removed
		garbage  = 5 // an unreadable mark of this session: removed
		unmarked = 6 // nothing to remove
	)
	for it := range 7 {
		roomtest.Put(t, ctx, rc, paths.Item(it), nil)
	}
	create := func(c regcenter.Center, p string, data []byte) {
		t.Helper()
		if _, err := c.Create(ctx, p, data, regcenter.Ephemeral); err != nil {
			t.Fatal(err)
		}
	}
	create(rc, paths.ItemNode(stale, layout.Running), mark(ended))
	create(rc, paths.ItemNode(current, layout.Running), mark(live))
	create(rc, paths.ItemNode(running, layout.Running), mark(ended))
	create(other, paths.ItemNode(foreign, layout.Running), mark(ended))
	create(rc, paths.ItemNode(claimed, layout.Failover), []byte("me"))
	create(rc, paths.ItemNode(garbage, layout.Running), []byte("not json"))
	roomtest.Put(t, ctx, rc, "/fence", nil)
	fenced := true
	e := &Ended{Center: rc, Paths: paths, Log: slog.New(slog.DiscardHandler), Claims: func() bool { return true },
		Fence: func(s *regcenter.Session) (regcenter.Op, bool) {
			return regcenter.CheckOp{Path: "/fence", Version: 0}, fenced && s == live
		}}
	there := func(it int, node string) bool { return roomtest.Exists(t, ctx, rc, paths.ItemNode(it, node)) }
	all := func() map[int]bool {
		return map[int]bool{
			stale: there(stale, layout.Running), current: there(current, layout.Running), running: there(running, layout.Running),
			foreign: there(foreign, layout.Running), claimed: there(claimed, layout.Failover), garbage: there(garbage, layout.Running),
		}
	}
	busy := func(it int) bool { return it == running }

	// The first registration, and a new session id: nothing is read.
	e.Sweep(ctx, nil, live, busy)
	e.Sweep(ctx, stranger, live, busy)
	e.Sweep(ctx, live, live, busy)
	for it, ok := range all() {
		if !ok {
			t.Fatalf("item %d's node removed by a sweep that had nothing to do", it)
		}
	}

	e.Sweep(ctx, ended, live, busy)
	want := map[int]bool{stale: false, current: true, running: true, foreign: true, claimed: false, garbage: false}
	if got := all(); !equalSets(got, want) {
		t.Fatalf("after the sweep: %v, want %v", got, want)
	}

	// The run still going completes, and the live generation can fence:
	// its mark goes.
	e.AfterRun(ctx, ended, live, []int{running})
	if there(running, layout.Running) {
		t.Fatal("the mark of a run of the ended generation outlived its completion")
	}
	// A run that completes before the live generation can fence leaves
	// its item to the sweep, which removes it though the book still has
	// it.
	create(rc, paths.ItemNode(running, layout.Running), mark(ended))
	fenced = false
	e.AfterRun(ctx, ended, live, []int{running})
	if !there(running, layout.Running) {
		t.Fatal("removed without a fence")
	}
	fenced = true
	e.Sweep(ctx, ended, live, busy)
	if there(running, layout.Running) {
		t.Fatal("the sweep left the mark of a run that completed before the live generation could fence")
	}
	// The live generation's mark and the other session's stayed
	// throughout; a completion under a stranger's session removes nothing.
	e.AfterRun(ctx, stranger, live, []int{current, foreign})
	if !there(current, layout.Running) || !there(foreign, layout.Running) || there(unmarked, layout.Running) {
		t.Fatal("a mark of the live generation or of another session was removed")
	}
}

func equalSets(a, b map[int]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
