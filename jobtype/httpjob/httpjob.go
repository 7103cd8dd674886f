// Package httpjob sends one HTTP request per sharding item: an HTTP job.
//
// The request's method, URL and headers are fixed by the Config; its body
// is a text/template rendered with the item's sharding context
// ([jobtype.Context]: .JobName, .ShardingItem, .ShardingParameter, ...,
// and .JSON, the whole context as JSON). The context also goes, as JSON,
// in a request header (ContextHeader). A response outside 2xx is a failure
// ([StatusError]) carrying the status and the start of the body, at most
// BodyExcerpt bytes. Each request is bounded by Timeout and by the item's
// context, so a shutdown or a job timeout cancels it.
//
// The response's body, whatever its status, is the run's output
// (job.RecordOutput), kept by the history: the body itself when it is one
// JSON value of at most job.MaxOutputSize bytes, else its first bytes as a
// JSON string. An empty body records no output.
//
// Values from the sharding context are data: in a JSON body write
// {{json .ShardingParameter}}, which quotes and escapes, and in a form or a
// query {{urlquery .ShardingParameter}}.
//
// A request carries what its Config says and nothing of the instance's
// environment: no header, URL or body value is read from environment
// variables, and the body template cannot reach them, so the registry
// center's digest and the console's token never travel with a request.
// Headers are the job's own and meant for its URL's origin: when a
// response redirects elsewhere (another scheme, host or port), the
// default client follows without them. The default client uses the
// proxy the instance's HTTP_PROXY, HTTPS_PROXY and NO_PROXY name, as
// Go's default transport does; set Client to choose otherwise.
//
// When the item's context carries a span (job.WithTracerProvider), the
// request carries its W3C trace context (the traceparent and tracestate
// headers), so that the service called continues the trace. Those headers
// are the scheduler's: Header and ContextHeader may not name them.
package httpjob

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype"
	"go.opentelemetry.io/otel/propagation"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds a request when Timeout is 0.
	DefaultTimeout = 30 * time.Second
	// DefaultContextHeader carries the sharding context when ContextHeader
	// is "".
	DefaultContextHeader = "Shardjob-Sharding-Context"
	// DefaultBodyExcerpt is how much of a failed response's body a
	// StatusError keeps when BodyExcerpt is 0.
	DefaultBodyExcerpt = 1 << 10
)

// Sentinel errors.
var (
	// ErrInvalidConfig means a Config cannot be used; the error says why.
	ErrInvalidConfig = errors.New("httpjob: invalid config")
	// ErrStatus is wrapped by every StatusError: the server answered
	// outside 2xx.
	ErrStatus = errors.New("httpjob: response status not 2xx")
)

// Config describes the request of an HTTP job.
type Config struct {
	// Method is the HTTP method. "" means GET, or POST when Body is set.
	Method string
	// URL is the absolute http or https URL to call. Required.
	URL string
	// Header holds extra request headers.
	Header map[string]string
	// Body is a text/template of the request body, rendered per item with
	// a [jobtype.Context] and .JSON. "" sends no body.
	Body string
	// Timeout bounds each request, from connecting to reading the
	// response. 0 means DefaultTimeout.
	Timeout time.Duration
	// ContextHeader names the header that carries the sharding context as
	// JSON. "" means DefaultContextHeader.
	ContextHeader string
	// BodyExcerpt is how many bytes of a failed response's body a
	// StatusError keeps. 0 means DefaultBodyExcerpt.
	BodyExcerpt int
	// Client sends the requests. nil means a client of its own with
	// http.DefaultTransport that follows up to 10 redirects, dropping
	// Header's entries on any that leaves URL's origin.
	Client *http.Client
	// Logger is told of each request's outcome. nil means slog.Default().
	Logger *slog.Logger
}

// Job sends its Config's request once per item. Create it with [New].
type Job struct {
	cfg    Config
	method string
	url    string
	body   *template.Template
	log    *slog.Logger
}

// Funcs are the functions body templates may call besides text/template's
// own (urlquery among them): json writes its argument as JSON (a string
// quoted and escaped).
var Funcs = template.FuncMap{
	"json": func(v any) (string, error) {
		data, err := json.Marshal(v)
		return string(data), err
	},
}

// New validates cfg and returns its job.
func New(cfg Config) (*Job, error) {
	u, err := url.Parse(cfg.URL)
	switch {
	case cfg.URL == "":
		return nil, fmt.Errorf("%w: url is required", ErrInvalidConfig)
	case err != nil:
		return nil, fmt.Errorf("%w: url %q: %w", ErrInvalidConfig, cfg.URL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: url %q: scheme must be http or https", ErrInvalidConfig, cfg.URL)
	case u.Host == "":
		return nil, fmt.Errorf("%w: url %q has no host", ErrInvalidConfig, cfg.URL)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("%w: timeout %v must not be negative", ErrInvalidConfig, cfg.Timeout)
	case cfg.BodyExcerpt < 0:
		return nil, fmt.Errorf("%w: bodyExcerpt %d must not be negative", ErrInvalidConfig, cfg.BodyExcerpt)
	}
	method := strings.ToUpper(cfg.Method)
	if method == "" {
		method = http.MethodGet
		if cfg.Body != "" {
			method = http.MethodPost
		}
	}
	if strings.ContainsAny(method, " \t\r\n()<>@,;:\\\"/[]?={}") {
		return nil, fmt.Errorf("%w: method %q is not an HTTP method", ErrInvalidConfig, cfg.Method)
	}
	for k, v := range cfg.Header {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") || strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("%w: header %q: %q is not a valid header", ErrInvalidConfig, k, v)
		}
		if traceHeader(k) {
			return nil, fmt.Errorf("%w: header %q: the scheduler sets it from the item's span when tracing is on", ErrInvalidConfig, k)
		}
	}
	if cfg.ContextHeader == "" {
		cfg.ContextHeader = DefaultContextHeader
	} else if strings.ContainsAny(cfg.ContextHeader, " \t\r\n:") {
		return nil, fmt.Errorf("%w: contextHeader %q is not a header name", ErrInvalidConfig, cfg.ContextHeader)
	} else if traceHeader(cfg.ContextHeader) {
		return nil, fmt.Errorf("%w: contextHeader %q: the scheduler sets it from the item's span when tracing is on", ErrInvalidConfig, cfg.ContextHeader)
	}
	cfg.ContextHeader = textproto.CanonicalMIMEHeaderKey(cfg.ContextHeader)
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.BodyExcerpt == 0 {
		cfg.BodyExcerpt = DefaultBodyExcerpt
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{CheckRedirect: keepHeadersHome(u, cfg.Header)}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	j := &Job{cfg: cfg, method: method, url: cfg.URL, log: cfg.Logger}
	if cfg.Body != "" {
		t, err := template.New("body").Funcs(Funcs).Option("missingkey=error").Parse(cfg.Body)
		if err != nil {
			return nil, fmt.Errorf("%w: body template: %w", ErrInvalidConfig, err)
		}
		// Render once with an empty context: a field that does not exist
		// is an error now rather than at every fire.
		if err := t.Execute(io.Discard, templateData{}); err != nil {
			return nil, fmt.Errorf("%w: body template: %w", ErrInvalidConfig, err)
		}
		j.body = t
	}
	return j, nil
}

// maxRedirects is how many redirects the default client follows, as
// net/http's default policy does.
const maxRedirects = 10

// keepHeadersHome is the default client's redirect policy: a redirect to
// another origin than home's (scheme, host and port) is followed without
// the configured headers, which may hold the credentials of home's
// service. net/http drops only Authorization, Cookie and a few others,
// and only for another domain.
func keepHeadersHome(home *url.URL, header map[string]string) func(*http.Request, []*http.Request) error {
	origin := func(u *url.URL) string { return u.Scheme + "://" + canonicalHost(u) }
	want := origin(home)
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if origin(req.URL) != want {
			for k := range header {
				req.Header.Del(k)
			}
		}
		return nil
	}
}

// traceHeader reports whether name is one of the W3C trace context's
// headers, which carry the item's span.
func traceHeader(name string) bool {
	return slices.Contains(propagation.TraceContext{}.Fields(), strings.ToLower(name))
}

// canonicalHost is u's host in lower case with the scheme's default port
// made explicit.
func canonicalHost(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(host, port)
}

// templateData is what a body template sees.
type templateData struct {
	jobtype.Context
	// JSON is the whole context as JSON.
	JSON string
}

// StatusError is a response outside 2xx.
type StatusError struct {
	// Code is the status code; Status the status line's text.
	Code   int
	Status string
	// Body is the start of the response body.
	Body string
	// Truncated says the body was longer than Body.
	Truncated bool
}

// Error gives the status and the body's excerpt.
func (e *StatusError) Error() string {
	s := "httpjob: " + e.Status
	if b := strings.TrimSpace(e.Body); b != "" {
		s += ": " + b
		if e.Truncated {
			s += " …"
		}
	}
	return s
}

// Unwrap makes errors.Is match ErrStatus.
func (e *StatusError) Unwrap() error { return ErrStatus }

// Execute sends the request for sc's item.
func (j *Job) Execute(ctx context.Context, sc job.ShardingContext) error {
	c := jobtype.ContextOf(sc)
	cjson := c.JSON()
	var body io.Reader
	if j.body != nil {
		var buf bytes.Buffer
		if err := j.body.Execute(&buf, templateData{Context: c, JSON: cjson}); err != nil {
			return fmt.Errorf("httpjob: rendering the body: %w", err)
		}
		body = &buf
	}
	rctx, cancel := context.WithTimeout(ctx, j.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, j.method, j.url, body)
	if err != nil {
		return fmt.Errorf("httpjob: %w", err)
	}
	for k, v := range j.cfg.Header {
		req.Header.Set(k, v)
	}
	req.Header.Set(j.cfg.ContextHeader, cjson)
	// The item's span, if any: nothing is added without one.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := j.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("httpjob: %s %s: %w", j.method, j.url, err)
	}
	// The body's start: the run's output, and a failure's excerpt.
	head, rerr := io.ReadAll(io.LimitReader(resp.Body, int64(max(j.cfg.BodyExcerpt, job.MaxOutputSize))+1))
	recordBody(ctx, j.log, head, rerr != nil)
	excerpt := head[:min(len(head), j.cfg.BodyExcerpt+1)]
	// Drain a little more so the connection can be reused, then close.
	_, derr := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	cerr := resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &StatusError{Code: resp.StatusCode, Status: resp.Status, Body: string(excerpt)}
		if len(excerpt) > j.cfg.BodyExcerpt {
			se.Body, se.Truncated = string(excerpt[:j.cfg.BodyExcerpt]), true
		}
		return se
	}
	if err := errors.Join(rerr, derr, cerr); err != nil {
		return fmt.Errorf("httpjob: reading the response of %s %s: %w", j.method, j.url, err)
	}
	j.log.Debug("request done", "job", sc.JobName, "item", sc.Item, "status", resp.StatusCode)
	return nil
}
