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
// default client follows without them. Under the address policy the
// default client connects directly, using no proxy: the address it checks
// must be the one it calls. With AllowPrivateAddresses it uses the proxy
// the instance's HTTP_PROXY, HTTPS_PROXY and NO_PROXY name, as Go's
// default transport does. Set Client to choose otherwise (a Client of
// your own replaces the dial-time check).
//
// When the item's context carries a span (job.WithTracerProvider), the
// request carries its W3C trace context (the traceparent and tracestate
// headers), so that the service called continues the trace. Those headers
// are the scheduler's: Header and ContextHeader may not name them.
//
// # What a job may cost
//
// A job's definition may come from anyone allowed to define jobs (POST
// /jobs, a run file), and every instance following the namespace builds
// and runs it, so what it costs is bounded, with documented maxima:
//
//   - The body template: at most MaxBodyTemplate (64 KiB) of text. [New]
//     refuses, naming the field body, a range over an integer literal above
//     MaxRangeIterations (10,000), ranges nested deeper than MaxRangeDepth
//     (2), define, block and template, and a template that goes over a
//     render's budget when rendered once with an empty context. Every
//     render — that one and each run's — stops with [ErrTemplateBudget] at
//     MaxRangeIterations range iterations in all, MaxRenderedBody (1 MiB)
//     of output, a function call that could make more than MaxRenderedBody
//     bytes or more than MaxRenderWork (8 MiB) in all, a printf width or
//     precision above MaxFormatWidth (1,024) or given by *, or after
//     MaxRenderTime (250 ms); a run whose body stops so fails, sending
//     nothing. The template's data has no methods but .FireTime's String,
//     Format (a layout of at most 64 bytes), Unix and UnixMilli.
//   - The response: at most max(BodyExcerpt, job.MaxOutputSize) bytes are
//     kept, and at most 64 KiB more read so that the connection can
//     be reused; an endless response costs no more. BodyExcerpt is at most
//     MaxBodyExcerpt (64 KiB), so a StatusError, and a log line quoting it,
//     holds at most that much of the body. The run's output is at most
//     job.MaxOutputSize (64 KiB) of JSON.
//
// # Where a request may go
//
// Unless AllowPrivateAddresses is set, a job may not call the instance's
// own network: a URL whose host is localhost or a loopback, private (RFC
// 1918, fc00::/7), link-local (169.254.0.0/16, the cloud metadata
// service's among them; fe80::/10), carrier-grade NAT, multicast,
// unspecified or other reserved address is refused by [New] ([ErrAddress]),
// and the default client refuses to dial such an address after resolving
// a name — the URL's or a redirect's — so a name that resolves to one,
// now or later, reaches nothing. The policy is the dispatcher's webhooks'.
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
	"sync"
	"text/template"
	"time"

	"github.com/shardjob/shardjob/internal/netpolicy"
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
	// MaxBodyExcerpt is the largest BodyExcerpt.
	MaxBodyExcerpt = 64 << 10
)

// maxDrain is how much of a response's body is read, past what is kept,
// so that its connection can be reused; a longer body's connection is
// closed.
const maxDrain = 64 << 10

// Sentinel errors.
var (
	// ErrInvalidConfig means a Config cannot be used; the error says why.
	ErrInvalidConfig = errors.New("httpjob: invalid config")
	// ErrStatus is wrapped by every StatusError: the server answered
	// outside 2xx.
	ErrStatus = errors.New("httpjob: response status not 2xx")
	// ErrAddress means a URL's host, or the address it resolved to, is one
	// the address policy forbids (see AllowPrivateAddresses). From New it
	// comes wrapped with ErrInvalidConfig.
	ErrAddress = errors.New("httpjob: address not allowed")
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
	// a [jobtype.Context] and .JSON. "" sends no body. It is bounded as
	// the package documentation says (MaxBodyTemplate, MaxRenderedBody,
	// ...).
	Body string
	// Timeout bounds each request, from connecting to reading the
	// response. 0 means DefaultTimeout.
	Timeout time.Duration
	// ContextHeader names the header that carries the sharding context as
	// JSON. "" means DefaultContextHeader.
	ContextHeader string
	// BodyExcerpt is how many bytes of a failed response's body a
	// StatusError keeps. 0 means DefaultBodyExcerpt; at most
	// MaxBodyExcerpt.
	BodyExcerpt int
	// AllowPrivateAddresses lets the job call loopback, private,
	// link-local (the cloud metadata service), carrier-grade NAT and other
	// reserved addresses, and localhost. Default false: New refuses a URL
	// naming one, and the default client refuses to dial one (ErrAddress).
	AllowPrivateAddresses bool
	// Client sends the requests. nil means a client of its own that
	// follows up to 10 redirects, dropping Header's entries on any that
	// leaves URL's origin, and whose dialer enforces the address policy
	// (with AllowPrivateAddresses, http.DefaultTransport).
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
// quoted and escaped). When a body renders, json and text/template's
// functions that make strings are replaced by bounded versions of
// themselves (see the package documentation).
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
	case cfg.BodyExcerpt > MaxBodyExcerpt:
		return nil, fmt.Errorf("%w: bodyExcerpt %d is over the maximum of %d (MaxBodyExcerpt)", ErrInvalidConfig, cfg.BodyExcerpt, MaxBodyExcerpt)
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
	if !cfg.AllowPrivateAddresses {
		if why := netpolicy.HostWhy(u.Hostname()); why != "" {
			return nil, fmt.Errorf("%w: url %q: %w: %s; set allowPrivateAddresses to allow it", ErrInvalidConfig, cfg.URL, ErrAddress, why)
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.BodyExcerpt == 0 {
		cfg.BodyExcerpt = DefaultBodyExcerpt
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{CheckRedirect: keepHeadersHome(u, cfg.Header)}
		if !cfg.AllowPrivateAddresses {
			cfg.Client.Transport = policedTransport()
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	j := &Job{cfg: cfg, method: method, url: cfg.URL, log: cfg.Logger}
	if cfg.Body != "" {
		t, err := parseBody(cfg.Body)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		// Render once with an empty context, within the render's budget: a
		// field that does not exist, or a template over its budget, is an
		// error now rather than at every fire.
		if _, err := render(t, templateData{}, time.Now); err != nil {
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
		b, err := render(j.body, newTemplateData(c, cjson), time.Now)
		if err != nil {
			return fmt.Errorf("httpjob: rendering the body: %w", err)
		}
		body = bytes.NewReader(b)
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
	_, derr := io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
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

// policedTransport is the default client's transport under the address
// policy (netpolicy.Transport). It is shared by the jobs that use it, as
// http.DefaultTransport is.
var policedTransport = sync.OnceValue(func() *http.Transport {
	return netpolicy.Transport(func(err error) error {
		return fmt.Errorf("%w: the host %v; set allowPrivateAddresses to allow it", ErrAddress, err)
	})
})
