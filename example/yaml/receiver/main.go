// Command receiver is the service the HTTP job of example/yaml/nogo.yaml
// calls: it prints each request's sharding context and body and answers
// 204. It stands for a service of one's own; the jobs themselves need no
// Go code (see example/yaml/nogo.yaml).
//
//	go run ./example/yaml/receiver -listen 127.0.0.1:8765
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/jobtype/httpjob"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8765", "address to listen on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *listen, ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Printf("%s %s context=%s body=%s\n", r.Method, r.URL.Path, r.Header.Get(httpjob.DefaultContextHeader), body)
		w.WriteHeader(http.StatusNoContent)
	})}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }() // ends with Shutdown below
	slog.Info("receiver listening", "addr", *listen)
	select {
	case err := <-errc:
		slog.Error("receiver", "err", err)
		os.Exit(1)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		slog.Error("receiver shutdown", "err", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		slog.Error("receiver", "err", err)
	}
}
