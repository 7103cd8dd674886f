package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/regcenter"
)

// Probes is the peer probe loop of an instance: every interval it GETs
// the health endpoint of every other live instance that publishes one, and
// adds the outcome to the peer's failure counter (layout.Probe), one per
// probed instance that every prober adds to, written over its version. The
// prober whose failure brings the counter to Failures marks the peer
// offline; a success resets the counter and removes the peer's offline
// mark.
type Probes struct {
	// Every is the interval between rounds, and each probe's deadline.
	Every time.Duration
	// Client sends the probes.
	Client *http.Client
	// Self is this instance's server id, which it does not probe.
	Self string
	// Failures is how many failed probes in a row mark a peer offline.
	Failures int
	// RC is the registry the instances are read from and the counters and
	// offline marks written in.
	RC regcenter.Center
	// Timeout is the deadline of each probe's registry writes.
	Timeout time.Duration
	// PeerOffline is called when this instance marked peer offline, with
	// the probe's error; PeerOnline when it removed peer's offline mark.
	PeerOffline func(peer string, err error)
	PeerOnline  func(peer string)
	// Log takes the failed rounds, probes and writes.
	Log *slog.Logger
}

// Run probes every interval until ctx ends.
func (p Probes) Run(ctx context.Context) {
	tick := time.NewTicker(p.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		vctx, cancel := context.WithTimeout(ctx, p.Every)
		view, err := placement.ReadView(vctx, p.RC, p.Log)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				p.Log.Warn("probing peers: reading the instances", "err", err)
			}
			continue
		}
		for peer, info := range view.Instances {
			if peer == p.Self || info.HealthURL == "" {
				continue
			}
			perr := p.probe(ctx, peer, info.HealthURL)
			if ctx.Err() != nil {
				return
			}
			if err := p.record(ctx, peer, perr); err != nil && ctx.Err() == nil {
				p.Log.Warn("recording a probe", "peer", peer, "err", err)
			}
		}
	}
}

// probe GETs a peer's health endpoint.
func (p Probes) probe(ctx context.Context, peer, target string) error {
	ctx, cancel := context.WithTimeout(ctx, p.Every)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", peer, resp.Status)
	}
	return nil
}

// record adds a probe's outcome to the peer's counter: a failure counts,
// and at Failures marks the peer offline; a success resets the counter
// and marks it online.
func (p Probes) record(ctx context.Context, peer string, probeErr error) error {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	rc := p.RC
	path := layout.Probe(peer)
	for range placement.Attempts {
		data, st, err := rc.Get(ctx, path)
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
				if _, err := rc.Set(ctx, path, []byte("0"), version); errors.Is(err, regcenter.ErrBadVersion) {
					continue
				} else if err != nil {
					return err
				}
			}
			return p.online(ctx, peer)
		}
		n++
		if version < 0 {
			if err := rc.EnsurePath(ctx, layout.Probes); err != nil {
				return err
			}
			_, err = rc.Create(ctx, path, []byte(strconv.Itoa(n)), regcenter.Persistent)
			if errors.Is(err, regcenter.ErrNodeExists) {
				continue
			}
		} else {
			_, err = rc.Set(ctx, path, []byte(strconv.Itoa(n)), version)
			if errors.Is(err, regcenter.ErrBadVersion) {
				continue
			}
		}
		if err != nil {
			return err
		}
		p.Log.Warn("a peer's health endpoint failed", "peer", peer, "failures", n, "err", probeErr)
		if n == p.Failures {
			if err := markOffline(ctx, rc, peer); err != nil {
				return err
			}
			p.Log.Warn("a peer failed its health endpoint too many times in a row: marked offline", "peer", peer, "failures", n)
			p.PeerOffline(peer, probeErr)
		}
		return nil
	}
	return fmt.Errorf("probe counter of %s: %w", peer, regcenter.ErrBadVersion)
}

// online removes a peer's offline mark after a successful probe.
func (p Probes) online(ctx context.Context, peer string) error {
	removed, err := clearOffline(ctx, p.RC, peer)
	if err != nil || !removed {
		return err
	}
	p.Log.Info("a peer answers its health endpoint again: marked online", "peer", peer)
	p.PeerOnline(peer)
	return nil
}
