package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

// TestStarter: jobs that exist register alone, the others in batches of
// PerTxn after their trees are made, each told whether its tree was made;
// every failure is joined, and a batch that fails registers none of its
// jobs.
func TestStarter(t *testing.T) {
	tests := []struct {
		name     string
		jobs     []string
		existing []string
		failTree string // a job whose batch's transaction fails
		failReg  string // a job whose registration fails
		batches  [][]string
		made     []string // registered with their tree made
		alone    []string // registered as existing
	}{
		{name: "all new", jobs: []string{"a", "b", "c"}, batches: [][]string{{"a", "b"}, {"c"}}, made: []string{"a", "b", "c"}},
		{name: "some exist", jobs: []string{"a", "b", "c"}, existing: []string{"b"}, batches: [][]string{{"a", "c"}}, made: []string{"a", "c"}, alone: []string{"b"}},
		{name: "all exist", jobs: []string{"a", "b"}, existing: []string{"a", "b"}, alone: []string{"a", "b"}},
		{name: "a batch fails", jobs: []string{"a", "b", "c"}, failTree: "c", batches: [][]string{{"a", "b"}, {"c"}}, made: []string{"a", "b"}},
		{name: "a registration fails", jobs: []string{"a", "b"}, failReg: "b", batches: [][]string{{"a", "b"}}, made: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu                   sync.Mutex
				batches              [][]string
				made, alone          []string
				treeFail, registFail = errors.New("tree"), errors.New("register")
			)
			sess := &regcenter.Session{}
			st := Starter[string]{InFlight: 2, PerTxn: 2, Name: func(s string) string { return s },
				Create: func(_ context.Context, batch []string) (*regcenter.Session, map[string]bool, error) {
					mu.Lock()
					defer mu.Unlock()
					batches = append(batches, slices.Clone(batch))
					if slices.Contains(batch, tt.failTree) {
						return nil, nil, treeFail
					}
					out := map[string]bool{}
					for _, j := range batch {
						out[j] = true
					}
					return sess, out, nil
				},
				Register: func(_ context.Context, j string, s *regcenter.Session, wasMade bool) error {
					mu.Lock()
					defer mu.Unlock()
					switch {
					case s == sess && wasMade:
						made = append(made, j)
					case s == nil && !wasMade:
						alone = append(alone, j)
					default:
						t.Errorf("%s registered under %p, made %v", j, s, wasMade)
					}
					if j == tt.failReg {
						return fmt.Errorf("%s: %w", j, registFail)
					}
					return nil
				},
			}
			existing := map[string]bool{}
			for _, j := range tt.existing {
				existing[j] = true
			}
			err := st.Start(context.Background(), tt.jobs, existing)
			if errors.Is(err, treeFail) != (tt.failTree != "") || errors.Is(err, registFail) != (tt.failReg != "") {
				t.Fatalf("Start: %v", err)
			}
			slices.SortFunc(batches, func(a, b []string) int { return slices.Compare(a, b) })
			slices.Sort(made)
			slices.Sort(alone)
			if !slices.EqualFunc(batches, tt.batches, slices.Equal) || !slices.Equal(made, tt.made) || !slices.Equal(alone, tt.alone) {
				t.Fatalf("batches %v, made %v, alone %v; want %v, %v, %v", batches, made, alone, tt.batches, tt.made, tt.alone)
			}
		})
	}
}

// TestStarterJoins: jobs that exist are joined in batches of PerTxn; each
// joined job finishes its start by what the join returned for it, and one
// the join left out registers alone, as without Join; a joined job's
// failure is joined too.
func TestStarterJoins(t *testing.T) {
	var (
		mu                  sync.Mutex
		batches             [][]string
		finished, alone     []string
		finishFail, refused = errors.New("finish"), "d"
	)
	st := Starter[string]{InFlight: 2, PerTxn: 2, Name: func(s string) string { return s },
		Create: func(context.Context, []string) (*regcenter.Session, map[string]bool, error) {
			t.Error("a new tree made for a job that exists")
			return nil, nil, nil
		},
		Join: func(_ context.Context, batch []string) map[string]func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			batches = append(batches, slices.Clone(batch))
			out := map[string]func(context.Context) error{}
			for _, j := range batch {
				if j == "b" {
					continue // left out
				}
				out[j] = func(context.Context) error {
					mu.Lock()
					defer mu.Unlock()
					finished = append(finished, j)
					if j == refused {
						return finishFail
					}
					return nil
				}
			}
			return out
		},
		Register: func(_ context.Context, j string, s *regcenter.Session, made bool) error {
			mu.Lock()
			defer mu.Unlock()
			if s != nil || made {
				t.Errorf("%s registered under %p, made %v", j, s, made)
			}
			alone = append(alone, j)
			return nil
		},
	}
	jobs := []string{"a", "b", "c", "d", "e"}
	existing := map[string]bool{}
	for _, j := range jobs {
		existing[j] = true
	}
	if err := st.Start(context.Background(), jobs, existing); !errors.Is(err, finishFail) {
		t.Fatalf("Start: %v, want the failure of %s's finish", err, refused)
	}
	slices.SortFunc(batches, func(a, b []string) int { return slices.Compare(a, b) })
	slices.Sort(finished)
	if want := [][]string{{"a", "b"}, {"c", "d"}, {"e"}}; !slices.EqualFunc(batches, want, slices.Equal) {
		t.Errorf("batches %v, want %v", batches, want)
	}
	if want := []string{"a", "c", "d", "e"}; !slices.Equal(finished, want) {
		t.Errorf("finished by their join %v, want %v", finished, want)
	}
	if want := []string{"b"}; !slices.Equal(alone, want) {
		t.Errorf("registered alone %v, want %v", alone, want)
	}
}

// TestStarterJoinsThoseMadeMeanwhile: jobs thought new whose trees
// another instance made first (Create did not make them) are joined in a
// batch too; one the join leaves out registers under the batch's session,
// told its tree was not made here.
func TestStarterJoinsThoseMadeMeanwhile(t *testing.T) {
	var (
		mu                     sync.Mutex
		joinBatches            [][]string
		made, finished, others []string
	)
	sess := &regcenter.Session{}
	st := Starter[string]{InFlight: 2, PerTxn: 4, Name: func(s string) string { return s },
		Create: func(_ context.Context, batch []string) (*regcenter.Session, map[string]bool, error) {
			return sess, map[string]bool{"a": true, "d": true}, nil // b and c were made by another
		},
		Join: func(_ context.Context, batch []string) map[string]func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			joinBatches = append(joinBatches, slices.Clone(batch))
			return map[string]func(context.Context) error{"b": func(context.Context) error {
				mu.Lock()
				defer mu.Unlock()
				finished = append(finished, "b")
				return nil
			}} // c left out
		},
		Register: func(_ context.Context, j string, s *regcenter.Session, wasMade bool) error {
			mu.Lock()
			defer mu.Unlock()
			if s != sess {
				t.Errorf("%s registered under %p, want the batch's session", j, s)
			}
			if wasMade {
				made = append(made, j)
			} else {
				others = append(others, j)
			}
			return nil
		},
	}
	if err := st.Start(context.Background(), []string{"a", "b", "c", "d"}, nil); err != nil {
		t.Fatalf("Start: %v", err)
	}
	slices.Sort(made)
	if want := [][]string{{"b", "c"}}; !slices.EqualFunc(joinBatches, want, slices.Equal) {
		t.Errorf("joined %v, want %v", joinBatches, want)
	}
	if !slices.Equal(made, []string{"a", "d"}) || !slices.Equal(finished, []string{"b"}) || !slices.Equal(others, []string{"c"}) {
		t.Errorf("made %v, finished by their join %v, registered as existing %v; want [a d], [b], [c]", made, finished, others)
	}
}
