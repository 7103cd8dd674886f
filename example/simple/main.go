// Command simple runs one job defined in Go until it is stopped: the
// smallest complete use of shardjob.
//
// From the repository root:
//
//	go run ./example/simple                       # an embedded etcd: nothing to install
//	go run ./example/simple -zk 127.0.0.1:2181    # a running ZooKeeper (make zk-start starts one there)
//	go run ./example/simple -etcd 127.0.0.1:2379  # a running etcd cluster
//
// With neither -zk nor -etcd it runs a single-member etcd inside the
// process, its data in a temporary directory removed at the end.
//
// Stop it with Ctrl-C (SIGINT) or SIGTERM: it shuts down gracefully, letting
// running items finish. To watch the items split, start a ZooKeeper with
// make zk-start (or an etcd) and run the command in two terminals with
// distinct ids:
//
//	go run ./example/simple -zk 127.0.0.1:2181 -id one
//	go run ./example/simple -zk 127.0.0.1:2181 -id two
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/example/internal/demoreg"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

func main() {
	reg := demoreg.Register(nil)
	id := flag.String("id", "", "server `id` of this instance (default: one per process, the host's address and pid)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, reg, *id); err != nil {
		fmt.Fprintln(os.Stderr, "simple:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, flags *demoreg.Flags, id string) (err error) {
	reg, err := flags.Start(ctx, "shop")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, reg.Close()) }()
	slog.Info("registry", "is", reg.String())

	// One registry center (one session) per process.
	rc, err := regcenter.Open(ctx, reg.Config())
	if err != nil {
		return err
	}
	defer rc.Close() // after the scheduler's Shutdown: defers run last-in first-out

	var opts []job.Option
	if id != "" {
		opts = append(opts, job.WithServerID(id))
	}
	sched, err := job.NewScheduler(rc, opts...)
	if err != nil {
		return err
	}

	err = sched.Add(ctx, job.Config{
		Name:                   "orders-sync",
		Cron:                   "*/2 * * * * *", // every two seconds
		ShardingTotalCount:     4,
		ShardingItemParameters: "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen",
		JobParameter:           "batch=100",
		Failover:               true,
	}, job.SimpleFunc(syncOrders))
	if err != nil {
		return err
	}
	if err := sched.Start(ctx); err != nil {
		return err
	}
	slog.Info("running; stop with Ctrl-C", "server", sched.ServerID())

	<-ctx.Done()
	slog.Info("shutting down: running items get 10s to finish")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return sched.Shutdown(shutdownCtx)
}

// syncOrders is called once per sharding item per fire, concurrently for
// the items this instance holds.
func syncOrders(ctx context.Context, sc job.ShardingContext) error {
	// Fetch this item's orders (sc.ItemParameter is its city), honouring ctx.
	select {
	case <-time.After(300 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	// Right before the side effect: is the item still ours?
	if err := sc.StillOwner(); err != nil {
		return err
	}
	fmt.Printf("%s  %s: item %d (%s) synced, %s, fire %s\n",
		time.Now().Format("15:04:05.000"), sc.ServerID, sc.Item, sc.ItemParameter, sc.JobParameter, sc.FireTime.Format("15:04:05"))
	return nil
}
