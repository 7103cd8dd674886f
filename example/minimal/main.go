// Command minimal is the smallest shardjob program, the one shown in the
// README: one job, defined in Go, on a ZooKeeper at 127.0.0.1:2181.
//
// From the repository root:
//
//	make zk-start              # a local ZooKeeper on 127.0.0.1:2181
//	go run ./example/minimal   # Ctrl-C to stop
//	make zk-stop
//
// Started twice, on one host or two, the four items split between the two
// processes: each process has its own server id by default (its address
// and pid). SHARDJOB_REGCENTER_SERVERS points it at another ZooKeeper.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// One registry center (one ZooKeeper session) and one scheduler per process.
	cfg := regcenter.Config{Servers: []string{"127.0.0.1:2181"}, Namespace: "shop"}
	if servers := os.Getenv("SHARDJOB_REGCENTER_SERVERS"); servers != "" {
		cfg.Servers = strings.Split(servers, ",")
	}
	rc, err := regcenter.NewZooKeeper(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	sched, err := job.NewScheduler(rc)
	if err != nil {
		log.Fatal(err)
	}

	// Every five seconds, four items spread over the live instances.
	err = sched.Add(ctx, job.Config{
		Name:                   "orders-sync",
		Cron:                   "*/5 * * * * *",
		ShardingTotalCount:     4,
		ShardingItemParameters: "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen",
		Failover:               true,
	}, job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
		if err := sc.StillOwner(); err != nil { // right before a side effect
			return err
		}
		fmt.Printf("%s: item %d (%s) of fire %s\n", sc.ServerID, sc.Item, sc.ItemParameter, sc.FireTime.Format("15:04:05"))
		return nil
	}))
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}

	<-ctx.Done() // Ctrl-C or SIGTERM: let running items finish, leave the cluster
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sched.Shutdown(shutdownCtx); err != nil {
		log.Print(err)
	}
}
