package job

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/regcenter"
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

func (s *Scheduler) probeLoop() {
	tick := time.NewTicker(s.opts.probeEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.opts.probeEvery)
		view, err := placement.ReadView(ctx, s.rc, s.log)
		cancel()
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Warn("probing peers: reading the instances", "err", err)
			}
			continue
		}
		for peer, info := range view.Instances {
			if peer == s.opts.serverID || info.HealthURL == "" {
				continue
			}
			perr := s.probe(peer, info.HealthURL)
			if s.ctx.Err() != nil {
				return
			}
			if err := s.recordProbe(peer, perr); err != nil && s.ctx.Err() == nil {
				s.log.Warn("recording a probe", "peer", peer, "err", err)
			}
		}
	}
}

// probe GETs a peer's health endpoint.
func (s *Scheduler) probe(peer, target string) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.probeEvery)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := s.opts.probeClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", peer, resp.Status)
	}
	return nil
}

// recordProbe adds a probe's outcome to the peer's counter: a failure
// counts, and at HealthFailures marks the peer offline; a success resets
// the counter and marks it online.
func (s *Scheduler) recordProbe(peer string, probeErr error) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.reshardTimeout)
	defer cancel()
	p := layout.Probe(peer)
	for range placement.Attempts {
		data, st, err := s.rc.Get(ctx, p)
		n, version := 0, int32(-1)
		switch {
		case errors.Is(err, regcenter.ErrNoNode):
		case err != nil:
			return err
		default:
			version = st.Version
			n, _ = strconv.Atoi(string(data)) // garbage counts as 0
		}
		if probeErr == nil {
			if version >= 0 && n != 0 {
				if _, err := s.rc.Set(ctx, p, []byte("0"), version); errors.Is(err, regcenter.ErrBadVersion) {
					continue
				} else if err != nil {
					return err
				}
			}
			return s.clearOffline(ctx, peer)
		}
		n++
		if version < 0 {
			if err := s.rc.EnsurePath(ctx, layout.Probes); err != nil {
				return err
			}
			_, err = s.rc.Create(ctx, p, []byte(strconv.Itoa(n)), regcenter.Persistent)
			if errors.Is(err, regcenter.ErrNodeExists) {
				continue
			}
		} else {
			_, err = s.rc.Set(ctx, p, []byte(strconv.Itoa(n)), version)
			if errors.Is(err, regcenter.ErrBadVersion) {
				continue
			}
		}
		if err != nil {
			return err
		}
		s.log.Warn("a peer's health endpoint failed", "peer", peer, "failures", n, "err", probeErr)
		if n == HealthFailures {
			if err := s.rc.EnsurePath(ctx, layout.Offline); err != nil {
				return err
			}
			if _, err := s.rc.Create(ctx, layout.OfflineEntry(peer), nil, regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
				return err
			}
			s.log.Warn("a peer failed its health endpoint 3 times in a row: marked offline", "peer", peer)
			s.emit(Event{Kind: EventPeerOffline, Peer: peer, Err: probeErr})
		}
		return nil
	}
	return fmt.Errorf("probe counter of %s: %w", peer, regcenter.ErrBadVersion)
}

// clearOffline removes a peer's offline mark after a successful probe.
func (s *Scheduler) clearOffline(ctx context.Context, peer string) error {
	err := s.rc.Delete(ctx, layout.OfflineEntry(peer), -1)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	s.log.Info("a peer answers its health endpoint again: marked online", "peer", peer)
	s.emit(Event{Kind: EventPeerOnline, Peer: peer})
	return nil
}
