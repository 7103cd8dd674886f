package httpjob_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype"
	"github.com/shardjob/shardjob/jobtype/httpjob"
)

func sc(item int, param string) job.ShardingContext {
	return job.ShardingContext{JobName: "j", TaskID: "j@1", FireTime: time.UnixMilli(1000), ShardingTotalCount: 4,
		Item: item, ItemParameter: param, Kind: job.KindFire, ServerID: "s1"}
}

type seen struct {
	method, path, ctype, header, body string
}

func server(t *testing.T, status int, reply string) (*httptest.Server, chan seen) {
	got := make(chan seen, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get(httpjob.DefaultContextHeader), string(b)}
		w.WriteHeader(status)
		io.WriteString(w, reply)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func TestRequestCarriesTheContext(t *testing.T) {
	srv, got := server(t, http.StatusAccepted, "ok")
	evil := `Bei"jing", "admin": true, "x": "`
	j, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: srv.URL + "/sync", Header: map[string]string{"Content-Type": "application/json"},
		Body: `{"city": {{json .ShardingParameter}}, "item": {{.ShardingItem}}, "ctx": {{.JSON}}}`, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Execute(context.Background(), sc(2, evil)); err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s.method != http.MethodPost || s.path != "/sync" || s.ctype != "application/json" {
		t.Fatalf("request %+v", s)
	}
	var hdr jobtype.Context
	if err := json.Unmarshal([]byte(s.header), &hdr); err != nil || hdr.ShardingItem != 2 || hdr.ShardingParameter != evil {
		t.Fatalf("context header %q: %+v %v", s.header, hdr, err)
	}
	var body struct {
		City string          `json:"city"`
		Item int             `json:"item"`
		Ctx  jobtype.Context `json:"ctx"`
	}
	if err := json.Unmarshal([]byte(s.body), &body); err != nil || body.City != evil || body.Item != 2 || body.Ctx.TaskID != "j@1" {
		t.Fatalf("body %q: %+v %v", s.body, body, err)
	}
}

func TestNon2xxIsAFailureWithABoundedExcerpt(t *testing.T) {
	srv, _ := server(t, http.StatusServiceUnavailable, strings.Repeat("busy ", 1000))
	j, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: srv.URL, BodyExcerpt: 20})
	if err != nil {
		t.Fatal(err)
	}
	err = j.Execute(context.Background(), sc(0, ""))
	var se *httpjob.StatusError
	if !errors.As(err, &se) || !errors.Is(err, httpjob.ErrStatus) {
		t.Fatalf("err %v, want a StatusError", err)
	}
	if se.Code != 503 || len(se.Body) != 20 || !se.Truncated || !strings.Contains(err.Error(), "503") {
		t.Fatalf("status error %+v", se)
	}
}

func TestRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	j, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: srv.URL, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Execute(context.Background(), sc(0, "")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the request's deadline", err)
	}
}

func TestBadConfigsAreRefused(t *testing.T) {
	for _, c := range []struct {
		cfg  httpjob.Config
		want string
	}{
		{httpjob.Config{}, "url is required"},
		{httpjob.Config{URL: "ftp://x/y"}, "scheme must be http or https"},
		{httpjob.Config{URL: "http://"}, "has no host"},
		{httpjob.Config{URL: "http://h/%zz"}, "url"},
		{httpjob.Config{URL: "http://h", Timeout: -time.Second}, "timeout"},
		{httpjob.Config{URL: "http://h", Method: "GET X"}, "method"},
		{httpjob.Config{URL: "http://h", Header: map[string]string{"X-A": "a\r\nX-B: b"}}, "header"},
		{httpjob.Config{URL: "http://h", Body: "{{.Nope}}"}, "body template"},
		{httpjob.Config{URL: "http://h", Body: "{{"}, "body template"},
	} {
		_, err := httpjob.New(c.cfg)
		if !errors.Is(err, httpjob.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want one naming %q", c.cfg, err, c.want)
		}
	}
}

func ExampleNew() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Printf("%s %s %s\n", r.Method, r.URL.Path, b)
	}))
	defer srv.Close()
	j, err := httpjob.New(httpjob.Config{
		URL:    srv.URL + "/orders/sync",
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   `{"city": {{json .ShardingParameter}}, "item": {{.ShardingItem}}}`,
		// The test's server is on the loopback address.
		AllowPrivateAddresses: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = j.Execute(context.Background(), job.ShardingContext{JobName: "orders", Item: 1, ItemParameter: "Shanghai", ShardingTotalCount: 2})
	fmt.Println(err)
	// Output:
	// POST /orders/sync {"city": "Shanghai", "item": 1}
	// <nil>
}
