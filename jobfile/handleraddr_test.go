package jobfile_test

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
	"github.com/shardjob/shardjob/jobfile"
)

// An error handler in a job file or a definition posted at run time calls
// only public addresses unless it says allowPrivateAddresses, as an http:
// section does: a literal private address is refused when the job is
// built, a name resolving to one when the report is delivered, and
// nothing reaches the receiver.
func TestErrorHandlerAddressPolicy(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hook" {
			hits.Add(1)
			return
		}
		w.WriteHeader(http.StatusInternalServerError) // the job fails
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	head := "  - name: a\n    type: http\n    cron: '@hourly'\n    shardingTotalCount: 1\n    http: {url: \"" + srv.URL + "/job\", allowPrivateAddresses: true}\n"
	build := func(handler string) (job.Job, error) {
		f, _ := file(t, "unused", head+"    errorHandler: "+handler+"\n")
		return jobfile.Build(f.Jobs[0], nil, jobfile.Options{})
	}
	for _, h := range []string{
		`{type: webhook, url: "` + srv.URL + `/hook", secret: s}`,
		`{type: webhook, url: "http://[::1]` + port + `/hook", secret: s}`,
		`{type: webhook, url: "http://169.254.169.254/latest", secret: s}`,
		`{type: email, addr: "127.0.0.1:25", from: a@b.c, to: [d@e.f]}`,
	} {
		_, err := build(h)
		if !errors.Is(err, jobfile.ErrInvalidJob) || !errors.Is(err, jobfile.ErrAddress) || !strings.Contains(err.Error(), "allowPrivateAddresses") {
			t.Errorf("%s: err %v, want ErrAddress naming allowPrivateAddresses", h, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Opted in, it is delivered.
	j, err := build(`{type: webhook, url: "` + srv.URL + `/hook", secret: s, retries: -1, allowPrivateAddresses: true}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Execute(ctx, job.ShardingContext{JobName: "a", Item: 0, FireTime: time.Now()}); err == nil {
		t.Fatal("the job did not fail")
	}
	if hits.Load() != 1 {
		t.Fatalf("the receiver got %d reports with allowPrivateAddresses, want 1", hits.Load())
	}
}
