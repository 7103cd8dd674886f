// Command dispatchchaos is one dispatcher node for the dispatcher's chaos test
// (dispatch/chaos_test.go): it runs tasks from a shared PostgreSQL the way
// a client does — the start listener hands the work to a goroutine and
// returns; the work takes a random time in [min-hold, max-hold], and the
// goroutine then calls FinishAttempt — and writes an execution log line at
// each step, each with one write(2) to a file opened with O_APPEND, so the
// lines survive a kill -9:
//
//	S uuid worker attempt node lease unixnano   the start listener began
//	E uuid worker attempt node lease unixnano   the work is done; FinishAttempt is called next
//	C uuid worker attempt node lease unixnano   the attempt's context ended before the work was done
//	F uuid worker attempt node lease unixnano   FinishAttempt returned nil: the finish is recorded
//	X uuid worker attempt node lease unixnano   FinishAttempt failed (the error goes to standard error)
//
// node is this process's name (one per incarnation), lease the lease that
// holds the attempt. It runs until killed or until its standard input
// closes; then it waits for its work to end and closes the dispatcher.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	_ "github.com/shardjob/shardjob/store/postgres"
)

func main() {
	dsn := flag.String("dsn", "", "PostgreSQL DSN")
	node := flag.String("node", "", "node id")
	logPath := flag.String("log", "", "execution log file (appended)")
	minHold := flag.Duration("min-hold", 20*time.Millisecond, "the least time a task's work takes")
	maxHold := flag.Duration("max-hold", 300*time.Millisecond, "the most time a task's work takes")
	flag.Parse()
	if *minHold < 0 || *maxHold < *minHold {
		fmt.Fprintln(os.Stderr, "dispatchchaos: need 0 <= -min-hold <= -max-hold")
		os.Exit(2)
	}
	if err := run(*dsn, *node, *logPath, *minHold, *maxHold); err != nil {
		fmt.Fprintln(os.Stderr, "dispatchchaos:", err)
		os.Exit(1)
	}
}

func run(dsn, node, logPath string, minHold, maxHold time.Duration) error {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	line := func(kind string, t dispatch.Task) error {
		_, err := fmt.Fprintf(f, "%s %s %s %d %s %s %d\n", kind, t.UUID, t.Worker, t.Attempt, node, t.Node, time.Now().UnixNano())
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	// work is every goroutine doing a task's work; each ends when its work
	// is done and its finish answered (bounded by finishTimeout), or when
	// the attempt's context ends. Once stopping is set, no work is added.
	var (
		work     sync.WaitGroup
		mu       sync.Mutex
		stopping bool
	)
	const finishTimeout = 30 * time.Second
	var d *dispatch.Dispatcher
	do := func(ctx context.Context, t dispatch.Task) {
		hold := minHold
		if maxHold > minHold {
			hold += rand.N(maxHold - minHold + 1)
		}
		timer := time.NewTimer(hold)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			if err := line("C", t); err != nil {
				logger.Error("dispatchchaos: log", "err", err)
			}
			return
		}
		if err := line("E", t); err != nil {
			logger.Error("dispatchchaos: log", "err", err)
			return
		}
		fctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
		defer cancel()
		kind := "F"
		if err := d.FinishAttempt(fctx, t.UUID, t.Attempt); err != nil {
			kind = "X"
			logger.Error("dispatchchaos: finish", "task", t.UUID, "attempt", t.Attempt, "err", err)
		}
		if err := line(kind, t); err != nil {
			logger.Error("dispatchchaos: log", "err", err)
		}
	}
	d, err = dispatch.Open(context.Background(), dispatch.Config{
		Driver: "postgres", DSN: dsn, NodeID: node, Logger: logger,
		LeaseTTL: 5 * time.Second, SweepInterval: 200 * time.Millisecond,
		Backoff: dispatch.Backoff{Base: 50 * time.Millisecond, Max: time.Second},
		OnStart: func(ctx context.Context, t dispatch.Task) error {
			mu.Lock()
			if stopping {
				mu.Unlock()
				return errors.New("dispatchchaos: stopping")
			}
			work.Add(1)
			mu.Unlock()
			if err := line("S", t); err != nil {
				work.Done()
				return err
			}
			go func() {
				defer work.Done()
				do(ctx, t)
			}()
			return nil
		},
	})
	if err != nil {
		return err
	}
	if err := d.Start(context.Background()); err != nil {
		return errors.Join(err, d.Close(context.Background()))
	}
	fmt.Println("ready")
	// The harness closes stdin for a clean stop; kill -9 needs no help.
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		logger.Warn("dispatchchaos: reading stdin", "err", err)
	}
	// Let the work in progress end and its finishes be answered (and
	// logged) before the dispatcher closes; each piece of work is bounded
	// by its hold and finishTimeout. The harness stops nodes once every
	// task has ended, so no start should come now; one that does fails
	// and is retried elsewhere.
	mu.Lock()
	stopping = true
	mu.Unlock()
	idle := make(chan struct{})
	go func() { work.Wait(); close(idle) }()
	var errs []error
	select {
	case <-idle:
	case <-time.After(maxHold + finishTimeout + 5*time.Second):
		errs = append(errs, errors.New("work still running at close"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs = append(errs, d.Close(ctx))
	// Close cancelled every attempt's context: the work ends now.
	select {
	case <-idle:
	case <-time.After(5 * time.Second):
		errs = append(errs, errors.New("work still running after close"))
	}
	return errors.Join(errs...)
}
