package httpjob_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype/httpjob"
)

// A body template that would run for long, or make much, is refused when
// the config is validated, naming the field and the bound; none of them
// is rendered past its bound (the first took 10.5 s before).
func TestHostileTemplatesAreRefusedAtValidation(t *testing.T) {
	doubling := `{{$a := "0123456789abcdef"}}` + strings.Repeat(`{{$a = print $a $a}}`, 40) + `{{$a}}`
	for _, c := range []struct{ name, body, want string }{
		{"a range over a large literal", `{{range 250000000}}{{end}}`, "MaxRangeIterations"},
		{"a range over a large variable", `{{$n := 250000000}}{{range $n}}{{end}}`, "MaxRangeIterations"},
		{"a range over a large hex literal", `{{range 0xFFFFFFFFFFFFFFFF}}{{end}}`, "MaxRangeIterations"},
		{"nested ranges over the budget", `{{range 10000}}{{range 10000}}{{end}}{{end}}`, "MaxRangeIterations"},
		{"ranges nested too deep", `{{range 10}}{{range 10}}{{range 10}}{{end}}{{end}}{{end}}`, "MaxRangeDepth"},
		{"recursion", `{{define "a"}}{{template "a" .}}{{end}}{{template "a" .}}`, "not allowed"},
		{"a template call", `{{template "x"}}`, "not allowed"},
		{"a block", `{{block "b" .}}x{{end}}`, "not allowed"},
		{"a huge printf width", `{{printf "%999999999d" 1}}`, "MaxFormatWidth"},
		{"a printf width from an argument", `{{printf "%*d" 999999999 1}}`, "not allowed"},
		{"a string doubled", doubling, "MaxRenderedBody"},
		{"an escaper over a large string", `{{$a := printf "%1000s" "x"}}{{$a = print $a $a $a $a $a $a $a $a}}{{$a = print $a $a $a $a $a $a $a $a}}{{$a = print $a $a $a $a $a $a $a $a}}{{js $a}}`, "MaxRenderedBody"},
		{"much output", `{{range 10000}}` + strings.Repeat("x", 200) + `{{end}}`, "MaxRenderedBody"},
		{"much work", `{{$a := printf "%1000s" "x"}}{{$a = print $a $a $a $a $a $a $a $a}}{{$a = print $a $a $a $a $a $a $a $a}}{{range 10000}}{{$b := print $a $a}}{{end}}`, "MaxRenderWork"},
		{"a long time layout", `{{.FireTime.Format "` + strings.Repeat("Monday", 20) + `"}}`, "layout"},
		{"time's own methods", `{{.FireTime.AddDate 1 0 0}}`, "AddDate"},
		{"a long template", strings.Repeat("x", httpjob.MaxBodyTemplate+1), "MaxBodyTemplate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := httpjob.New(httpjob.Config{URL: "https://example.com/", Body: c.body})
			// On a machine slow enough, a bound checked while rendering
			// may meet the time budget first.
			timeUp := errors.Is(err, httpjob.ErrTemplateBudget) && strings.Contains(err.Error(), "MaxRenderTime")
			if !errors.Is(err, httpjob.ErrInvalidConfig) || !strings.Contains(err.Error(), "body") || !strings.Contains(err.Error(), c.want) && !timeUp {
				t.Fatalf("err = %v, want ErrInvalidConfig naming body and %q", err, c.want)
			}
		})
	}
}

// A template whose costly part depends on the item's context passes
// validation, where that context is empty, and is stopped by the bounds
// at the run: the run fails and nothing is sent.
func TestRunRenderIsBounded(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	for _, body := range []string{
		`{{if .JobName}}{{range 10000}}{{range 10000}}{{end}}{{end}}{{end}}`,
		`{{range len .JSON}}{{range len $.JSON}}{{end}}{{end}}`,
		`{{$a := .JSON}}{{range 30}}{{$a = print $a $a}}{{end}}`,
	} {
		j, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: srv.URL, Body: body, Logger: testlog.Logger(t)})
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if err := j.Execute(context.Background(), sc(1, "p")); !errors.Is(err, httpjob.ErrTemplateBudget) {
			t.Errorf("%s: err = %v, want ErrTemplateBudget", body, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests sent with a body over its bounds", n)
	}
}

// Templates within the bounds render as before: the context's fields and
// JSON keys, the fire time, text/template's functions.
func TestBoundedTemplatesRenderAsBefore(t *testing.T) {
	srv, got := server(t, http.StatusOK, "")
	body := `{{range $i := 3}}{{$i}}{{end}} {{printf "%05d|%-4s|%q" .ShardingItem .Kind .ShardingParameter}} {{urlquery .ShardingParameter}} ` +
		`{{html "<a>"}} {{js "'"}} {{json .FireTime}} {{.FireTime.Format "2006"}} {{.FireTime.Unix}} {{len .JSON | printf "%T"}} {{index "ab" 0}} ` +
		`{{json .ShardingTotalCount}} {{with $x := .ServerID}}{{$x}}{{end}} {{print 1 2}}{{println "!"}}`
	j, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: srv.URL, Body: body, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Execute(context.Background(), sc(2, "a b")); err != nil {
		t.Fatal(err)
	}
	want := `012 00002|fire|"a b" a+b &lt;a&gt; \' "1970-01-01T00:00:01Z" 1970 1 int 97 4 s1 1 2!` + "\n"
	if s := <-got; s.body != want {
		t.Errorf("body\n%q, want\n%q", s.body, want)
	}
	// {{json .}} keeps the context's JSON keys.
	j, err = httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: srv.URL, Body: `{{json .}}`})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Execute(context.Background(), sc(2, "a")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; !strings.Contains(s.body, `"shardingParameter":"a"`) || !strings.Contains(s.body, `"fireTime":"1970-01-01T00:00:01Z"`) {
		t.Errorf("{{json .}} = %s", s.body)
	}
}

// bodyExcerpt is capped, and an endless failed response costs a bounded
// read: the excerpt (or the output's maximum), and a bounded drain.
func TestEndlessResponseCostsABoundedRead(t *testing.T) {
	_, err := httpjob.New(httpjob.Config{URL: "https://example.com/", BodyExcerpt: 200 << 20})
	if !errors.Is(err, httpjob.ErrInvalidConfig) || !strings.Contains(err.Error(), "bodyExcerpt") {
		t.Fatalf("a 200 MB bodyExcerpt: err = %v, want ErrInvalidConfig naming bodyExcerpt", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		chunk := []byte(strings.Repeat("endless ", 4<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				return // the client went away
			}
		}
	}))
	defer srv.Close()
	var read atomic.Int64
	client := &http.Client{Transport: countingTransport{http.DefaultTransport, &read}}
	defer client.CloseIdleConnections()
	j, err := httpjob.New(httpjob.Config{AllowPrivateAddresses: true, URL: srv.URL, BodyExcerpt: httpjob.MaxBodyExcerpt,
		Client: client, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	err = j.Execute(context.Background(), sc(0, ""))
	var se *httpjob.StatusError
	if !errors.As(err, &se) || se.Code != 500 || len(se.Body) != httpjob.MaxBodyExcerpt || !se.Truncated {
		t.Fatalf("err = %.200v, want a StatusError keeping %d bytes", err, httpjob.MaxBodyExcerpt)
	}
	if n := len(err.Error()); n > httpjob.MaxBodyExcerpt+100 {
		t.Errorf("the error's text is %d bytes, over the excerpt's maximum", n)
	}
	const most = max(httpjob.MaxBodyExcerpt, job.MaxOutputSize) + 1 + 64<<10
	if n := read.Load(); n > most {
		t.Errorf("read %d bytes of an endless response, want at most %d", n, most)
	}
}

// countingTransport counts the bytes read from response bodies.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// An HTTP job may not call the instance's own network (the cloud metadata
// service, loopback, private addresses) unless its config allows it.
func TestPrivateAddressesAreRefused(t *testing.T) {
	for _, u := range []string{
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"http://[::ffff:169.254.169.254]/",
		"http://[fd00:ec2::254]/",
		"http://127.0.0.1:8080/admin",
		"http://[::1]/",
		"http://localhost:2379/v3/kv/range",
		"http://10.0.0.1/",
		"http://192.168.1.1/",
		"http://100.100.100.200/latest/meta-data/",
		"http://0.0.0.0:2181/",
	} {
		_, err := httpjob.New(httpjob.Config{URL: u})
		if !errors.Is(err, httpjob.ErrInvalidConfig) || !errors.Is(err, httpjob.ErrAddress) || !strings.Contains(err.Error(), "allowPrivateAddresses") {
			t.Errorf("%s: err = %v, want ErrInvalidConfig and ErrAddress naming allowPrivateAddresses", u, err)
		}
		if _, err := httpjob.New(httpjob.Config{URL: u, AllowPrivateAddresses: true}); err != nil {
			t.Errorf("%s with AllowPrivateAddresses: %v", u, err)
		}
	}
	for _, u := range []string{"https://example.com/", "http://93.184.215.14/", "http://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/"} {
		if _, err := httpjob.New(httpjob.Config{URL: u}); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

func ExampleConfig_allowPrivateAddresses() {
	_, err := httpjob.New(httpjob.Config{URL: "http://169.254.169.254/latest/meta-data/"})
	fmt.Println(errors.Is(err, httpjob.ErrAddress))
	// Output:
	// true
}
