package dataflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype/dataflow"
)

// source hands out n numbers in batches of size.
type source struct{ next, n, size int }

func (s *source) fetch(context.Context, job.ShardingContext) ([]int, error) {
	var b []int
	for ; s.next < s.n && len(b) < s.size; s.next++ {
		b = append(b, s.next)
	}
	return b, nil
}

func TestStreamingRunsUntilAFetchIsEmpty(t *testing.T) {
	src := &source{n: 10, size: 3}
	var got []int
	j, err := dataflow.New(src.fetch, func(_ context.Context, _ job.ShardingContext, b []int) error {
		got = append(got, b...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Execute(context.Background(), job.ShardingContext{}); err != nil || len(got) != 3 {
		t.Fatalf("not streaming: %v, processed %v, want one batch", err, got)
	}
	if err := j.WithStreaming(true).Execute(context.Background(), job.ShardingContext{}); err != nil || len(got) != 10 {
		t.Fatalf("streaming: %v, processed %v, want all ten", err, got)
	}
}

func TestBatchErrorsDoNotStopTheStream(t *testing.T) {
	src := &source{n: 9, size: 3}
	bad := errors.New("poison")
	processed := 0
	j, err := dataflow.New(src.fetch, func(_ context.Context, _ job.ShardingContext, b []int) error {
		processed += len(b)
		if b[0] == 3 {
			return bad
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = j.WithStreaming(true).Execute(context.Background(), job.ShardingContext{})
	var be *dataflow.BatchErrors
	if !errors.As(err, &be) || !errors.Is(err, bad) || be.Batches != 3 || be.Failed != 1 || processed != 9 {
		t.Fatalf("err %v (%+v), processed %d", err, be, processed)
	}
}

func TestStreamEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	batches := 0
	endless := func(context.Context, job.ShardingContext) ([]string, error) { return []string{"x"}, nil }
	j, err := dataflow.New(endless, func(context.Context, job.ShardingContext, []string) error {
		if batches++; batches == 5 {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.WithStreaming(true).Execute(ctx, job.ShardingContext{}); !errors.Is(err, context.Canceled) || batches != 5 {
		t.Fatalf("err %v after %d batches", err, batches)
	}
}

func TestFetchErrorEndsTheStream(t *testing.T) {
	j, err := dataflow.New(func(context.Context, job.ShardingContext) ([]int, error) { return nil, errors.New("db down") },
		func(context.Context, job.ShardingContext, []int) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Execute(context.Background(), job.ShardingContext{Item: 2}); !errors.Is(err, dataflow.ErrFetch) || !strings.Contains(err.Error(), "db down") {
		t.Fatal(err)
	}
	if _, err := dataflow.New[int](nil, nil); err == nil {
		t.Fatal("New accepted nil functions")
	}
}

func ExampleNew() {
	// Orders of one shard, fetched 2 at a time until none are left.
	pending := map[int][]string{0: {"o-1", "o-2", "o-3"}, 1: {"o-4"}}
	fetch := func(_ context.Context, sc job.ShardingContext) ([]string, error) {
		n := min(2, len(pending[sc.Item]))
		batch := pending[sc.Item][:n]
		pending[sc.Item] = pending[sc.Item][n:]
		return batch, nil
	}
	process := func(_ context.Context, sc job.ShardingContext, batch []string) error {
		fmt.Println("item", sc.Item, "ships", batch)
		return nil
	}
	j, err := dataflow.New(fetch, process)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = j.WithStreaming(true).Execute(context.Background(), job.ShardingContext{Item: 0})
	fmt.Println(err)
	// Output:
	// item 0 ships [o-1 o-2]
	// item 0 ships [o-3]
	// <nil>
}
