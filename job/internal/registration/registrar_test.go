package registration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/regcenter"
)

// flagCenter answers Get only: the sharding flag's value, or ErrNoNode
// when flag is nil.
type flagCenter struct {
	regcenter.Center
	flag []byte
}

func (c flagCenter) Get(context.Context, string) ([]byte, regcenter.Stat, error) {
	if c.flag == nil {
		return nil, regcenter.Stat{}, regcenter.ErrNoNode
	}
	return c.flag, regcenter.Stat{}, nil
}

func TestDebts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return t0.Add(3*time.Minute + time.Second) }
	latest := t0.Add(3 * time.Minute)
	never := func(context.Context, int) (time.Time, error) { return time.Time{}, nil }
	badSchedule := errors.New("bad schedule")
	for _, tc := range []struct {
		name   string
		flag   []byte
		sched  fireplan.Schedule
		err    error // the schedule's
		want   []Debt
		wantEr error
	}{
		{name: "no flag", sched: every(time.Minute)},
		{name: "garbage flag", flag: []byte("x,y"), sched: every(time.Minute)},
		{name: "no items, the schedule unread", flag: []byte(""), err: badSchedule},
		{name: "items owed", flag: []byte("0,5"), sched: every(time.Minute),
			want: []Debt{{Item: 0, Since: latest, Latest: latest}}},
		{name: "the schedule does not parse", flag: []byte("0"), err: badSchedule, wantEr: badSchedule},
		{name: "no fire yet", flag: []byte("0"), sched: neverFires{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &Node{RC: flagCenter{flag: tc.flag}, Paths: layout.Job("j"), Server: "s"}
			items, err := n.PreviousItems(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			debts, err := Debts(context.Background(), items, 4, func() (fireplan.Schedule, error) { return tc.sched, tc.err }, now, never)
			if !errors.Is(err, tc.wantEr) || !slices.Equal(debts, tc.want) {
				t.Fatalf("Debts = %v, %v; want %v, %v", debts, err, tc.want, tc.wantEr)
			}
		})
	}
}

// neverFires is a schedule with no fire.
type neverFires struct{}

func (neverFires) Next(time.Time) time.Time { return time.Time{} }

func TestStartedInOrder(t *testing.T) {
	refused := errors.New("refused")
	for _, tc := range []struct {
		name     string
		prepares bool
		prepErr  []error // Prepare's answers, in turn
		want     []string
		wantErr  error
	}{
		{name: "not soon due", want: []string{"registered new", "arm", "schedule"}},
		{name: "prepares at once", prepares: true, prepErr: []error{nil},
			want: []string{"registered new", "arm", "prepare", "schedule"}},
		{name: "a lost connection is tried again", prepares: true, prepErr: []error{regcenter.ErrConnectionLoss, nil},
			want: []string{"registered new", "arm", "prepare", "prepare", "schedule"}},
		{name: "a refusal is not", prepares: true, prepErr: []error{refused},
			want: []string{"registered new", "arm", "prepare"}, wantErr: refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			g := &Registrar{
				Node:  &Node{Log: slog.New(slog.DiscardHandler)},
				Bound: func() time.Duration { return time.Minute },
				Registered: func(_ *regcenter.Session, created bool) {
					calls = append(calls, map[bool]string{true: "registered new", false: "registered"}[created])
				},
				Arm: func(context.Context) bool { calls = append(calls, "arm"); return tc.prepares },
				Prepare: func(context.Context) error {
					calls = append(calls, "prepare")
					err := tc.prepErr[0]
					tc.prepErr = tc.prepErr[1:]
					return err
				},
				Schedule: func() { calls = append(calls, "schedule") },
			}
			err := g.Started(context.Background(), nil, true)
			if !errors.Is(err, tc.wantErr) || !slices.Equal(calls, tc.want) {
				t.Fatalf("Started: %v, calls %v; want %v, %v", err, calls, tc.wantErr, tc.want)
			}
		})
	}
}

// A job joined in a batch finishes its start as a job joined node by node
// does after its nodes: the previous life's debts (not for a server id new
// to the job), the election, registered, then the watches and schedule.
// An election that lost the registry starts the registration over node
// by node (Join); one refused is the start's error.
func TestStartJoinedInOrder(t *testing.T) {
	refused := errors.New("refused")
	for _, tc := range []struct {
		name     string
		fresh    bool
		campaign error
		want     []string
		wantErr  error
	}{
		{name: "a server id new to the job", fresh: true, want: []string{"campaign", "registered", "arm", "schedule"}},
		{name: "a known one", want: []string{"recover [3]", "campaign", "registered", "arm", "schedule"}},
		{name: "the election lost the registry", fresh: true, campaign: regcenter.ErrConnectionLoss,
			want: []string{"campaign", "load"}, wantErr: refused},
		{name: "the election refused", fresh: true, campaign: refused, want: []string{"campaign"}, wantErr: refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			g := &Registrar{
				Node:  &Node{Log: slog.New(slog.DiscardHandler)},
				Bound: func() time.Duration { return time.Minute },
				Recover: func(_ context.Context, previous []int) error {
					calls = append(calls, fmt.Sprint("recover ", previous))
					return nil
				},
				Campaign:   func(context.Context) error { calls = append(calls, "campaign"); return tc.campaign },
				LoadConfig: func(context.Context) error { calls = append(calls, "load"); return refused },
				Registered: func(sess *regcenter.Session, created bool) {
					if created || sess == nil {
						t.Errorf("registered under %v, created %v", sess, created)
					}
					calls = append(calls, "registered")
				},
				Arm:      func(context.Context) bool { calls = append(calls, "arm"); return false },
				Schedule: func() { calls = append(calls, "schedule") },
			}
			err := g.StartJoined(context.Background(), &Joined{Session: &regcenter.Session{}, Fresh: tc.fresh, Previous: []int{3}})
			if !errors.Is(err, tc.wantErr) || !slices.Equal(calls, tc.want) {
				t.Fatalf("StartJoined: %v, calls %v; want %v, %v", err, calls, tc.wantErr, tc.want)
			}
		})
	}
}
