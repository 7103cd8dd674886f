package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/job"
)

// probes answers an orchestrator's questions about a running instance
// (shardjob run --health): is the process alive, and may it be counted on
// to run items. Kubernetes asks them as a liveness and a readiness probe.
type probes struct {
	sched    atomic.Pointer[job.Scheduler] // set once the scheduler has started
	stopping atomic.Bool                   // set at SIGTERM or SIGINT
}

// started records the scheduler once Start has returned: every job is
// registered.
func (p *probes) started(s *job.Scheduler) { p.sched.Store(s) }

// stop records that the instance is shutting down: from now on it is not
// ready, so that no new work (a rolling update's next step) counts on it.
func (p *probes) stop() { p.stopping.Store(true) }

// readiness says whether the instance is ready, and if not why.
func (p *probes) readiness() (bool, string) {
	if p.stopping.Load() {
		return false, "shutting down"
	}
	s := p.sched.Load()
	if s == nil {
		return false, "starting: jobs not registered yet"
	}
	if !s.Stats().Connected {
		return false, "not connected to the registry"
	}
	return true, "ready"
}

// ServeHTTP serves GET /livez (200 while the process serves) and GET
// /readyz (200 once every job is registered and while the registry is
// connected and the instance is not shutting down; 503 with the reason
// otherwise).
func (p *probes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	switch r.URL.Path {
	case "/livez":
		fmt.Fprintln(w, "ok")
	case "/readyz":
		ok, why := p.readiness()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, why)
	default:
		http.NotFound(w, r)
	}
}

// probeServer is the HTTP server of the probes, on its own listener.
type probeServer struct {
	addr string // the address it listens on
	srv  *http.Server
	done chan error // the result of Serve, once it has returned
}

// serveProbes listens on addr and serves p there until close.
func serveProbes(addr string, p *probes, log *slog.Logger) (*probeServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--health %s: %w", addr, err)
	}
	ps := &probeServer{
		addr: ln.Addr().String(),
		srv:  &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second},
		done: make(chan error, 1),
	}
	log.Info("serving probes", "addr", ln.Addr().String(), "liveness", "/livez", "readiness", "/readyz")
	go func() { // owned by ps: ends at close
		err := ps.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		ps.done <- err
	}()
	return ps, nil
}

// close stops the server within 5 s and returns Serve's error, if any.
func (ps *probeServer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := ps.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, ps.srv.Close())
	}
	return errors.Join(err, <-ps.done)
}
