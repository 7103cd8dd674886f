package dispatchhttp_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/dispatchhttp"
)

func TestNewNil(t *testing.T) {
	if d := dispatchhttp.New(nil); d != nil {
		t.Errorf("New(nil) = %#v, want nil (the handler answers 404)", d)
	}
}

// A dispatcher on SQLite that only reads the store: its caps and queues,
// no node and no counters; once closed, a 503 that says so.
func TestState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := dispatch.Open(ctx, dispatch.Config{DSN: filepath.Join(t.TempDir(), "dispatch.db"), Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			if err := d.Close(context.Background()); err != nil {
				t.Errorf("close the dispatcher: %v", err)
			}
		}
	})
	if err := d.SetGlobalMax(ctx, 7); err != nil {
		t.Fatal(err)
	}
	for _, w := range []dispatch.Worker{{Name: "email", MaxRunning: 2}, {Name: "sms", MaxRunning: 0}} {
		if err := d.PutWorker(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	if _, err := d.Assign(ctx, dispatch.Assignment{Worker: "email", Start: now.Add(-time.Minute), End: now.Add(time.Hour),
		Tasks: []dispatch.NewTask{{ExternalID: "e1"}, {ExternalID: "e2"}, {ExternalID: "e3"}}}); err != nil {
		t.Fatal(err)
	}

	src := dispatchhttp.New(d)
	st, err := src.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Node != "" || st.Stats != nil || st.Global != (jobhttp.DispatchCap{MaxRunning: 7}) || len(st.Queues) != 2 {
		t.Fatalf("state: %+v", st)
	}
	email, sms := st.Queues[0], st.Queues[1]
	if email.Worker != "email" || email.MaxRunning != 2 || email.Due != 3 || email.Tasks["waiting"] != 3 || len(email.Tasks) != 5 {
		t.Errorf("email: %+v", email)
	}
	if sms.Worker != "sms" || sms.MaxRunning != 0 || sms.Due != 0 || sms.Tasks["waiting"] != 0 || len(sms.Tasks) != 5 {
		t.Errorf("sms: %+v", sms)
	}

	closed = true
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = src.State(ctx)
	var se *jobhttp.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusServiceUnavailable || !errors.Is(err, dispatch.ErrClosed) {
		t.Errorf("closed: %v, want a 503 that is dispatch.ErrClosed", err)
	}
}
