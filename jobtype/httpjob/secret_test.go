package httpjob_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/jobtype/httpjob"
)

// dump is a server that records every request it gets, whole.
func dump(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, chan string) {
	got := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- fmt.Sprintf("%s %s\n%v\n%s", r.Method, r.URL, r.Header, b)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// The instance's credentials never travel with a request: not in a
// header, the URL or the body, not even where the config writes their
// names as a shell would expand them.
func TestRequestCarriesNoSecretOfTheInstance(t *testing.T) {
	secrets := map[string]string{
		"SHARDJOB_REGCENTER_DIGEST": "ops:zk-password",
		"SHARDJOB_TOKEN":            "console-token",
		"SHARDJOB_DISPATCH_TOKEN":   "dispatch-token-0123456789",
		"SECRET_X":                  "unrelated-secret",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	srv, got := dump(t, func(w http.ResponseWriter, r *http.Request) {})
	j, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: srv.URL + "/sync?t=$SHARDJOB_TOKEN",
		Header: map[string]string{"X-Token": "${SHARDJOB_TOKEN}", "Authorization": "Bearer $SECRET_X"},
		Body:   `{"ctx": {{.JSON}}, "p": {{json .ShardingParameter}}, "t": "$SHARDJOB_REGCENTER_DIGEST"}`, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Execute(context.Background(), sc(1, "$SHARDJOB_TOKEN")); err != nil {
		t.Fatal(err)
	}
	req := <-got
	for k, v := range secrets {
		if strings.Contains(req, v) {
			t.Errorf("the value of %s went out with the request:\n%s", k, req)
		}
	}
	if !strings.Contains(req, "${SHARDJOB_TOKEN}") || !strings.Contains(req, "Bearer $SECRET_X") {
		t.Errorf("the configured headers were not sent as written:\n%s", req)
	}
}

// The job's own headers, credentials among them, are not handed to
// another origin a response redirects to; on its own origin they are.
func TestRedirectElsewhereDropsTheConfiguredHeaders(t *testing.T) {
	other, otherGot := dump(t, func(w http.ResponseWriter, r *http.Request) {})
	var home *httptest.Server
	home, homeGot := dump(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/start":
			http.Redirect(w, r, home.URL+"/again", http.StatusFound)
		case "/again":
			http.Redirect(w, r, other.URL+"/away", http.StatusTemporaryRedirect)
		}
	})
	j, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: home.URL + "/start", Logger: testlog.Logger(t),
		Header: map[string]string{"X-Api-Key": "job-key-42", "Authorization": "Bearer job-token-42"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Execute(context.Background(), sc(0, "")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/start", "/again"} {
		if req := <-homeGot; !strings.Contains(req, path) || !strings.Contains(req, "job-key-42") || !strings.Contains(req, "job-token-42") {
			t.Errorf("on its own origin the request lost its headers:\n%s", req)
		}
	}
	req := <-otherGot
	if !strings.Contains(req, "/away") {
		t.Fatalf("the redirect was not followed:\n%s", req)
	}
	if strings.Contains(req, "job-key-42") || strings.Contains(req, "job-token-42") {
		t.Errorf("another origin got the job's headers:\n%s", req)
	}
	if !strings.Contains(req, "Shardjob-Sharding-Context") {
		t.Errorf("the context header is not a credential and should follow:\n%s", req)
	}
}
