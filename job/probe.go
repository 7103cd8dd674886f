package job

import (
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Mutual health checks: instances probe each other's
// HTTP health endpoint. Failures are counted in the registry, one counter per
// probed instance (layout.Probe) that every prober adds to, so the
// namespace agrees on the count; at HealthFailures in a row the instance is
// marked offline (layout.OfflineEntry), as its own failing check would,
// and one successful probe marks it online again and resets the count.

// WithHealthEndpoint publishes url (http or https) in this instance's node
// for the others to probe (see WithPeerProbe). The application serves it:
// any 2xx answer is healthy.
func WithHealthEndpoint(rawURL string) Option {
	return func(o *options) error {
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(rawURL) > 1024 {
			return fmt.Errorf("%w: health endpoint %q is not an http(s) URL", ErrInvalidOption, rawURL)
		}
		o.healthURL = rawURL
		return nil
	}
}

// WithPeerProbe makes this instance probe, every interval (at least 100
// ms), the health endpoint of every other live instance that publishes one,
// with client (nil: a client without redirects). Each probe has a deadline
// of interval.
func WithPeerProbe(interval time.Duration, client *http.Client) Option {
	return func(o *options) error {
		if interval < 100*time.Millisecond {
			return fmt.Errorf("%w: probe interval %v is under 100ms", ErrInvalidOption, interval)
		}
		if client == nil {
			client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		}
		o.probeEvery, o.probeClient = interval, client
		return nil
	}
}
