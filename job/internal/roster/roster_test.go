package roster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/shardjob/shardjob/internal/startstop"
)

var (
	errClosed  = errors.New("closed")
	errStarted = errors.New("started")
	errDup     = errors.New("duplicate")
)

// job is a runner as the tests see it.
type job struct {
	name    string
	parents []string
	awaited bool
}

func newRoster() *Roster[*job] {
	return New(Config[*job]{
		Name:       func(j *job) string { return j.name },
		Parents:    func(j *job) []string { return j.parents },
		SetAwaited: func(j *job) { j.awaited = true },
		Closed:     errClosed, Started: errStarted, Duplicate: errDup,
	})
}

func names(js []*job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.name
	}
	return out
}

// TestLife: the state's steps and what each refuses.
func TestLife(t *testing.T) {
	r := newRoster()
	for _, n := range []string{"c", "a", "b"} {
		if started, err := r.Add(n, nil, func() *job { return &job{name: n} }); err != nil || started {
			t.Fatalf("Add(%s) before start: started %v, %v", n, started, err)
		}
	}
	if _, err := r.Add("a", nil, func() *job { t.Fatal("made a duplicate"); return nil }); !errors.Is(err, errDup) {
		t.Fatalf("duplicate: %v", err)
	}
	refuse := errors.New("refused")
	if _, err := r.Start(func([]*job) error { return refuse }); !errors.Is(err, refuse) {
		t.Fatalf("Start with a refusing check: %v", err)
	}
	got, err := r.Start(nil)
	if err != nil || !slices.Equal(names(got), []string{"a", "b", "c"}) || !slices.Equal(r.Names(), names(got)) {
		t.Fatalf("Start: %v, %v; Names %v", names(got), err, r.Names())
	}
	if _, err := r.Start(nil); !errors.Is(err, errStarted) {
		t.Fatalf("second Start: %v", err)
	}
	if _, err := r.Add("d", func(rs []*job) error { return fmt.Errorf("%d jobs: %w", len(rs), refuse) }, nil); !errors.Is(err, refuse) {
		t.Fatalf("Add refused by its check once started: %v", err)
	}
	if started, err := r.Add("d", nil, func() *job { return &job{name: "d"} }); err != nil || !started {
		t.Fatalf("Add once started: started %v, %v", started, err)
	}
	d := r.Get("d")
	if d == nil || !r.Detach(d) || r.Detach(d) || r.Get("d") != nil {
		t.Fatal("Detach: not forgotten once, or twice")
	}
	all, ok := r.Close()
	if !ok || !slices.Equal(names(all), []string{"a", "b", "c"}) {
		t.Fatalf("Close: %v, %v", names(all), ok)
	}
	if _, ok := r.Close(); ok {
		t.Fatal("second Close reported a first")
	}
	for _, err := range []error{
		func() error { _, err := r.Add("e", nil, nil); return err }(),
		func() error { _, err := r.Start(nil); return err }(),
	} {
		if !errors.Is(err, errClosed) {
			t.Fatalf("after Close: %v", err)
		}
	}
}

// TestAwaited: a job's parents are awaited whichever is added first.
func TestAwaited(t *testing.T) {
	tests := []struct {
		name string
		add  []*job
		want []string // awaited, in name order
	}{
		{"parent first", []*job{{name: "p"}, {name: "c", parents: []string{"p"}}}, []string{"p"}},
		{"child first", []*job{{name: "c", parents: []string{"p"}}, {name: "p"}}, []string{"p"}},
		{"chain", []*job{{name: "a", parents: []string{"b"}}, {name: "b", parents: []string{"c"}}, {name: "c"}}, []string{"b", "c"}},
		{"parent elsewhere", []*job{{name: "c", parents: []string{"x"}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRoster()
			for _, j := range tt.add {
				if _, err := r.Add(j.name, nil, func() *job { return j }); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, j := range r.Sorted() {
				if j.awaited {
					got = append(got, j.name)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("awaited %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNoteAwaited: a parent named by a reload is awaited at once.
func TestNoteAwaited(t *testing.T) {
	r := newRoster()
	p, c := &job{name: "p"}, &job{name: "c"}
	r.Add("p", nil, func() *job { return p })
	r.Add("c", nil, func() *job { return c })
	c.parents = []string{"p"}
	if p.awaited {
		t.Fatal("awaited before the reload")
	}
	r.NoteAwaited()
	if !p.awaited || c.awaited {
		t.Fatalf("after NoteAwaited: p %v, c %v", p.awaited, c.awaited)
	}
}

// TestSpawn: a goroutine starts only while started.
func TestSpawn(t *testing.T) {
	r := newRoster()
	g := startstop.New(context.Background())
	ran := make(chan struct{}, 3)
	f := func() { ran <- struct{}{} }
	if r.Spawn(g, f) {
		t.Fatal("spawned before Start")
	}
	r.Start(nil)
	if !r.Spawn(g, f) {
		t.Fatal("not spawned once started")
	}
	<-ran
	r.Close()
	if r.Spawn(g, f) {
		t.Fatal("spawned once closed")
	}
	g.Close()
	g.Cancel(errClosed)
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}
