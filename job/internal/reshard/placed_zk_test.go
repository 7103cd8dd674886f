package reshard

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/roomtest"
	"github.com/shardjob/shardjob/regcenter"
)

// TestAwaitPlacedAsksOnceForTheReshardThatSeesThisServer: with no reshard
// due and this server's assignment never written (the reshard that took
// the flag read the servers before it joined), AwaitPlaced asks for a
// reshard and returns once it is answered; it asks once only, however
// the answer leaves this server; with its assignment written it asks
// nothing. A reshard due when it is called that leaves this server out is
// told as progress (Start's wait goes on while such answers come); the
// answer to its own request is not (AwaitPlaced returns on it).
func TestAwaitPlacedAsksOnceForTheReshardThatSeesThisServer(t *testing.T) {
	ctx, rc := roomtest.ZooKeeper(t, "placed")
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	paths := layout.Job("j")
	for _, p := range []string{paths.ShardingEpoch(), paths.Flag("b", layout.Status)} {
		if err := rc.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	x := &Resharder{RC: rc, Paths: paths, Name: "j", Server: "b", Log: slog.New(slog.DiscardHandler), Turn: freeTurn{}}
	mine := paths.Flag("b", layout.Sharding)

	// answer plays the leader's one answer to the flag b raises: it
	// writes b's assignment when place says so, then takes the flag.
	answer := func(place bool) <-chan error {
		done := make(chan error, 1)
		go func() { // ends with the answer, or with ctx
			done <- func() error {
				for {
					ok, _, err := rc.Exists(ctx, paths.Necessary())
					if err != nil {
						return err
					}
					if ok {
						break
					}
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(5 * time.Millisecond):
					}
				}
				ops := []regcenter.Op{regcenter.DeleteOp{Path: paths.Necessary(), Version: -1}}
				if place {
					ops = append(ops, regcenter.CreateOp{Path: mine, Data: []byte("0")})
				}
				return rc.Multi(ctx, ops...)
			}()
		}()
		return done
	}
	epochMoves := func() int32 {
		t.Helper()
		_, st, err := rc.Get(ctx, paths.ShardingEpoch())
		if err != nil {
			t.Fatal(err)
		}
		return st.Version
	}

	// Left out by the answer: asked once, not again.
	before := epochMoves()
	done := answer(false)
	if err := x.AwaitPlaced(ctx, func() { t.Error("left out by the answer to its own request: told of it as progress") }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := epochMoves() - before; n != 1 {
		t.Errorf("left out by the answer: %d reshards asked, want 1", n)
	}

	// Left out by a reshard already due (a join's flag, raised before):
	// that answer is told as progress, and the next is asked for once.
	if _, err := rc.Create(ctx, paths.Necessary(), nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	before = epochMoves()
	first := answer(false)
	var second <-chan error
	if err := x.AwaitPlaced(ctx, func() { second = answer(false) }); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if second == nil {
		t.Fatal("left out by a reshard due before: not told of its answer")
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if n := epochMoves() - before; n != 1 {
		t.Errorf("left out by a reshard due before: %d reshards asked, want 1", n)
	}

	// Placed by the answer.
	before = epochMoves()
	done = answer(true)
	if err := x.AwaitPlaced(ctx, func() { t.Error("placed by the answer: told of an answer that left it out") }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ok, _, err := rc.Exists(ctx, mine); err != nil || !ok {
		t.Errorf("AwaitPlaced returned before b's assignment was written (%v)", err)
	}
	if n := epochMoves() - before; n != 1 {
		t.Errorf("placed by the answer: %d reshards asked, want 1", n)
	}

	// Placed already: nothing asked.
	before = epochMoves()
	if err := x.AwaitPlaced(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := epochMoves() - before; n != 0 {
		t.Errorf("placed already: %d reshards asked, want none", n)
	}
}
