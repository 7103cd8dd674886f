package postgres_test

import (
	"fmt"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

// BenchmarkSet is one Set after another from one client: a round trip and
// a commit each.
func BenchmarkSet(b *testing.B) {
	c := newCenter(b, newDatabase(b, pg), regcenter.Config{Namespace: "bench"})
	ctx := ctxFor(b)
	if _, err := c.Create(ctx, "/n", nil, regcenter.Persistent); err != nil {
		b.Fatal(err)
	}
	data := []byte("x")
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Set(ctx, "/n", data, -1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMulti50 is a Multi of a check and 49 sets, as a fire's marks
// are written: one statement.
func BenchmarkMulti50(b *testing.B) {
	c := newCenter(b, newDatabase(b, pg), regcenter.Config{Namespace: "bench"})
	ctx := ctxFor(b)
	ops := []regcenter.Op{regcenter.CheckOp{Path: "/", Version: 0}}
	for i := range 49 {
		p := fmt.Sprintf("/n/%d", i)
		if _, err := c.Create(ctx, p, nil, regcenter.Persistent); err != nil {
			b.Fatal(err)
		}
		ops = append(ops, regcenter.SetOp{Path: p, Data: []byte("x"), Version: -1})
	}
	b.ResetTimer()
	for b.Loop() {
		if err := c.Multi(ctx, ops...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetParallel is Sets to distinct nodes of one namespace from
// several goroutines of one client: what the namespace's revision lock
// lets through.
func BenchmarkSetParallel(b *testing.B) {
	c := newCenter(b, newDatabase(b, pg), regcenter.Config{Namespace: "bench"})
	ctx := ctxFor(b)
	for i := range 8 {
		if _, err := c.Create(ctx, fmt.Sprintf("/n%d", i), nil, regcenter.Persistent); err != nil {
			b.Fatal(err)
		}
	}
	var next = make(chan int, 8)
	for i := range 8 {
		next <- i
	}
	b.SetParallelism(1)
	b.RunParallel(func(pb *testing.PB) {
		p := fmt.Sprintf("/n%d", <-next%8)
		for pb.Next() {
			if _, err := c.Set(ctx, p, []byte("x"), -1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
