package registration

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

func TestRetry(t *testing.T) {
	other := errors.New("refused")
	for _, tc := range []struct {
		name  string
		errs  []error // step's answers, in turn; nil ends
		bound time.Duration
		calls int
		want  error
	}{
		{"succeeds", []error{nil}, time.Minute, 1, nil},
		{"other error at once", []error{other, nil}, time.Minute, 1, other},
		{"lost, then succeeds", []error{regcenter.ErrConnectionLoss, regcenter.ErrSessionLost, nil}, time.Minute, 3, nil},
		{"lost, then other", []error{regcenter.ErrConnectionLoss, other, nil}, time.Minute, 2, other},
		{"bound passed", []error{regcenter.ErrConnectionLoss, regcenter.ErrConnectionLoss, nil}, 0, 2, regcenter.ErrConnectionLoss},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := Retry(context.Background(), slog.New(slog.DiscardHandler), tc.bound, "step", func() error {
				err := tc.errs[calls]
				calls++
				return err
			})
			if calls != tc.calls {
				t.Errorf("%d calls, want %d", calls, tc.calls)
			}
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err %v, want %v", err, tc.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Retry(ctx, slog.New(slog.DiscardHandler), time.Minute, "step", func() error { return regcenter.ErrSessionLost })
	if !errors.Is(err, regcenter.ErrSessionLost) {
		t.Errorf("err %v after ctx ended, want the step's", err)
	}
}
