package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/shardjob/shardjob/internal/startstop"
)

// serveUntilDone serves h on ln until ctx ends or the server fails, then
// shuts the server down, giving requests in flight up to 10 seconds.
// ready runs once the server serves (to say where). It returns what
// serving and shutting down went wrong with, nil for a clean stop.
func serveUntilDone(ctx context.Context, ln net.Listener, h http.Handler, ready func()) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	serving := startstop.New(ctx) // Serve's goroutine: it ends with Shutdown below
	served := make(chan error, 1)
	if err := serving.Go(func(context.Context) { served <- srv.Serve(ln) }); err != nil {
		return errors.Join(err, ln.Close()) // a new group refuses nothing
	}
	ready()
	var errs []error
	select {
	case <-ctx.Done():
	case err := <-served:
		errs = append(errs, err)
		served = nil // Serve has returned: nothing more comes
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		errs = append(errs, err)
	}
	if served != nil {
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, serving.Stop(context.Background())) // Serve has returned: nil at once
	return errors.Join(errs...)
}
