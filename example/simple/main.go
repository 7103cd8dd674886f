// Command simple runs one job defined in Go until it is stopped: the
// smallest complete use of shardjob.
//
// From the repository root:
//
//	go run ./example/simple                     # starts a local ZooKeeper (needs Java and ZooKeeper)
//	go run ./example/simple -zk 127.0.0.1:2181  # uses a running one (make zk-start starts one there)
//
// Stop it with Ctrl-C (SIGINT) or SIGTERM: it shuts down gracefully, letting
// running items finish. To watch the items split, start a ZooKeeper with
// make zk-start and run the command in two terminals with distinct ids:
//
//	go run ./example/simple -zk 127.0.0.1:2181 -id one
//	go run ./example/simple -zk 127.0.0.1:2181 -id two
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

func main() {
	zkFlag := flag.String("zk", os.Getenv("SHARDJOB_ZK"), "ZooKeeper `host:port` list, comma-separated (default: start a local ZooKeeper)")
	id := flag.String("id", "", "server `id` of this instance (default: the host's IP address)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *zkFlag, *id); err != nil {
		fmt.Fprintln(os.Stderr, "simple:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, zkServers, id string) error {
	var servers []string
	if zkServers != "" {
		servers = strings.Split(zkServers, ",")
	} else {
		slog.Info("starting a local ZooKeeper (regcenter/zktest)")
		zk, err := zktest.StartCluster(ctx, zktest.Options{})
		if err != nil {
			return err // says how to install ZooKeeper if it is missing
		}
		defer zk.Close()
		servers = zk.Servers()
	}

	// One registry center (one ZooKeeper session) per process.
	rc, err := regcenter.NewZooKeeper(ctx, regcenter.Config{Servers: servers, Namespace: "shop"})
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
