package postgres_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/postgres"
)

// Killing the watcher's listening connection again and again while
// another client writes loses no event and repeats none: the reader goes
// on from its revision, and a notification lost with the connection only
// delays it.
func TestWatchSurvivesListenerLoss(t *testing.T) {
	url := newDatabase(t, pg)
	a := newCenter(t, url, regcenter.Config{Namespace: "listener"})
	b := newCenter(t, url, regcenter.Config{Namespace: "listener"})
	ctx := ctxFor(t)
	if _, err := b.Create(ctx, "/n", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []regcenter.EventType
	_, cancel, err := a.WatchNow(ctx, "/n", regcenter.WatchNode, func(e regcenter.Event) {
		mu.Lock()
		got = append(got, e.Type)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	const sets = 60
	killed := 0
	for i := range sets {
		if i%10 == 0 {
			tag, err := b.Pool().Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()", postgres.ListenerApplicationName)
			if err != nil {
				t.Fatal(err)
			}
			killed += int(tag.RowsAffected())
		}
		if _, err := b.Set(ctx, "/n", []byte(fmt.Sprint(i)), -1); err != nil {
			t.Fatal(err)
		}
	}
	if killed == 0 {
		t.Fatal("no listening connection was found to kill")
	}
	want := slices.Repeat([]regcenter.EventType{regcenter.EventDataChanged}, sets)
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		done := n >= sets
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("after %d listener kills: %d events %v, want %d data-changed", killed, len(got), got, sets)
	}
}

// Stats counts a Multi as one request and its creates, sets and deletes
// (not its checks) as write operations, as regcenter.Stats documents.
func TestStatsWriteOps(t *testing.T) {
	c := newCenter(t, newDatabase(t, pg), regcenter.Config{Namespace: "stats"})
	ctx := ctxFor(t)
	if _, err := c.Create(ctx, "/a", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	before := c.Stats()
	err := c.Multi(ctx, regcenter.CheckOp{Path: "/a", Version: 0}, regcenter.CreateOp{Path: "/a/1"},
		regcenter.SetOp{Path: "/a", Data: []byte("x"), Version: 0}, regcenter.DeleteOp{Path: "/a/1", Version: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(ctx, "/a", []byte("y"), -1); err != nil {
		t.Fatal(err)
	}
	d := c.Stats().Sub(before)
	if d.Multis != 1 || d.Writes != 1 || d.WriteOps != 4 || d.Errors != 0 || d.Backend != regcenter.BackendPostgres {
		t.Fatalf("a Multi of a check and 3 writes, then a Set: %+v; want 1 multi, 1 write, 4 write ops", d)
	}
}
