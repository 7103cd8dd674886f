package httpjob

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
)

// A name that passes the check of the URL but resolves to a forbidden
// address — here the test server's loopback address, which a public name
// could resolve to, or be rebound to — is refused when dialled: the
// server sees no request.
func TestDialRefusesAForbiddenAddress(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	j, err := New(Config{URL: "http://shardjob.example/"})
	if err != nil {
		t.Fatal(err)
	}
	j.url = srv.URL // as if shardjob.example resolved to the loopback address
	err = j.Execute(context.Background(), job.ShardingContext{JobName: "j"})
	if !errors.Is(err, ErrAddress) || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("err = %v, want ErrAddress naming the address", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server got %d requests", n)
	}
}

// The time budget is checked around the render: a render that goes on
// past MaxRenderTime stops at its next check.
func TestRenderStopsAtItsTimeBudget(t *testing.T) {
	tmpl, err := parseBody(`{{range 10000}}{{$.JobName}}{{end}}`)
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	clock := func() time.Time { // a millisecond a check
		calls++
		return time.Unix(0, 0).Add(time.Duration(calls) * time.Millisecond)
	}
	_, err = render(tmpl, templateData{JobName: "j"}, clock)
	if !errors.Is(err, ErrTemplateBudget) || !strings.Contains(err.Error(), "MaxRenderTime") {
		t.Fatalf("err = %v, want ErrTemplateBudget naming MaxRenderTime", err)
	}
	if max := int(MaxRenderTime/time.Millisecond) + 3; calls > max {
		t.Errorf("%d checks, want the render stopped at the first past the budget (%d)", calls, max)
	}
}
