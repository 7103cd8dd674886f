package prepare

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

func TestSteps(t *testing.T) {
	var calls []string
	fail := errors.New("no quorum")
	var campaignErr error
	var p Prep
	p.Steps = Steps{
		WatchItems: func(context.Context) { calls = append(calls, "watch") },
		Campaign:   func(context.Context) error { calls = append(calls, "campaign"); return campaignErr },
		Job:        "j",
		Session:    func() *regcenter.Session { t.Fatal("the session is read once prepared"); return nil },
		Go:         func(func()) bool { t.Fatal("Now starts a preparation once prepared"); return false },
	}
	ctx := context.Background()
	if err := p.CampaignAgain(ctx); err != nil || len(calls) > 0 {
		t.Fatalf("CampaignAgain before Prepare: %v, calls %v; want nothing done", err, calls)
	}
	campaignErr = fail
	if err := p.Prepare(ctx); !errors.Is(err, fail) || err.Error() != `job "j": no quorum` || p.Done() {
		t.Fatalf("Prepare = %v, done %t; want the campaign's error naming the job, not prepared", err, p.Done())
	}
	campaignErr = nil
	if err := p.Prepare(ctx); err != nil || !p.Done() {
		t.Fatalf("Prepare = %v, done %t", err, p.Done())
	}
	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"Prepare", func() error { return p.Prepare(ctx) }},
		{"Sync", p.Sync},
		{"Now", func() error { p.Now(); return nil }},
	} {
		if err := step.do(); err != nil {
			t.Errorf("%s once prepared: %v", step.name, err)
		}
	}
	if err := p.CampaignAgain(ctx); err != nil {
		t.Fatal(err)
	}
	campaignErr = fail
	if err := p.CampaignAgain(ctx); !errors.Is(err, fail) || err.Error() != `job "j": no quorum` {
		t.Fatalf("CampaignAgain = %v; want the campaign's error naming the job", err)
	}
	want := []string{"watch", "campaign", "watch", "campaign", "campaign", "campaign"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
}
