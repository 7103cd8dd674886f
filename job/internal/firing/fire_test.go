package firing

import (
	"errors"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job/internal/assume"
	"github.com/shardjob/shardjob/job/internal/book"
	"github.com/shardjob/shardjob/job/internal/records"
	"github.com/shardjob/shardjob/job/internal/retry"
)

func TestFireRecheckOnlyAPlainFireOnce(t *testing.T) {
	f := &Fire{Kind: book.Fire}
	f.Recheck(3)
	f.Recheck(3)
	if len(f.Unrecorded) != 1 || f.Unrecorded[0] != 3 {
		t.Fatalf("Unrecorded = %v, want [3]", f.Unrecorded)
	}
	for _, k := range []book.Kind{book.Misfire, book.Failover, book.Trigger, book.Backfill} {
		g := &Fire{Kind: k}
		if g.Recheck(1); len(g.Unrecorded) != 0 {
			t.Errorf("%v: Unrecorded = %v, want none", k, g.Unrecorded)
		}
	}
}

func TestFireOfPriorAndFailedBefore(t *testing.T) {
	at := time.Unix(1000, 0)
	early := at.Add(-time.Minute)
	f := &Fire{At: at, Items: []int{1, 2}, Fires: map[int]time.Time{2: early},
		Priors:         map[int]records.Record{2: {Version: 7}},
		FailedAttempts: map[int]assume.Failed{1: {Fire: at, N: 2}, 2: {Fire: at, N: 1000}}}
	if !f.FireOf(1).Equal(at) || !f.FireOf(2).Equal(early) {
		t.Errorf("FireOf = %v, %v", f.FireOf(1), f.FireOf(2))
	}
	if f.Prior(2).Version != 7 || f.Prior(1).Version != 0 {
		t.Errorf("Prior = %v, %v", f.Prior(1), f.Prior(2))
	}
	one := &Fire{Items: []int{4}, OnePrior: records.Record{Version: 9}, HasOne: true}
	if one.Prior(4).Version != 9 || one.Prior(5).Version != 0 {
		t.Errorf("one's Prior = %v, %v", one.Prior(4), one.Prior(5))
	}
	if n := f.FailedBefore(1, at); n != 2 {
		t.Errorf("FailedBefore(1) = %d, want 2", n)
	}
	if n := f.FailedBefore(1, early); n != 0 {
		t.Errorf("FailedBefore of another fire = %d, want 0", n)
	}
	if n := f.FailedBefore(2, at); n != retry.MaxAttempts {
		t.Errorf("a hostile count = %d, want %d", n, retry.MaxAttempts)
	}
	closed := errors.New("closed")
	r := (&Fire{Kind: book.Misfire}).ClosedResult(5, early, closed)
	if r.Item != 5 || !r.Fire.Equal(early) || r.Kind != book.Misfire || r.Halted != closed || r.Begin.IsZero() || !r.End.Equal(r.Begin) {
		t.Errorf("ClosedResult = %+v", r)
	}
}
