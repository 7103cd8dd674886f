// Command chaosnode is one dispatcher node for the dispatcher's chaos test
// (dispatch/chaos_test.go): it runs tasks from a shared PostgreSQL and
// writes an execution log line for every start and every end of a
// handler, each with one write(2), so the lines survive a kill -9:
//
//	S uuid worker attempt node unixnano   the start listener began
//	E uuid worker attempt node unixnano   the handler's hold ended (before the finish is recorded)
//
// It runs until killed or until its standard input closes.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/shardjob/shardjob/dispatch"
)

func main() {
	dsn := flag.String("dsn", "", "PostgreSQL DSN")
	node := flag.String("node", "", "node id")
	logPath := flag.String("log", "", "execution log file (appended)")
	hold := flag.Duration("hold", time.Millisecond, "the most a handler holds its slot (random in [0, hold])")
	flag.Parse()
	if err := run(*dsn, *node, *logPath, *hold); err != nil {
		fmt.Fprintln(os.Stderr, "chaosnode:", err)
		os.Exit(1)
	}
}

func run(dsn, node, logPath string, hold time.Duration) error {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	line := func(kind string, t dispatch.Task) error {
		_, err := fmt.Fprintf(f, "%s %s %s %d %s %d\n", kind, t.UUID, t.Worker, t.Attempt, node, time.Now().UnixNano())
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	d, err := dispatch.Open(context.Background(), dispatch.Config{
		Driver: "postgres", DSN: dsn, NodeID: node, Logger: logger,
		LeaseTTL: 5 * time.Second, SweepInterval: 200 * time.Millisecond,
		Backoff:        dispatch.Backoff{Base: 50 * time.Millisecond, Max: time.Second},
		FinishOnReturn: true,
		OnStart: func(ctx context.Context, t dispatch.Task) error {
			if err := line("S", t); err != nil {
				return err
			}
			if hold > 0 {
				timer := time.NewTimer(rand.N(hold))
				select {
				case <-timer.C:
				case <-ctx.Done():
					timer.Stop()
				}
			}
			return line("E", t)
		},
	})
	if err != nil {
		return err
	}
	if err := d.Start(context.Background()); err != nil {
		return err
	}
	fmt.Println("ready")
	// The harness closes stdin for a clean stop; kill -9 needs no help.
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		logger.Warn("chaosnode: reading stdin", "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return d.Close(ctx)
}
