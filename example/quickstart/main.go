// Command quickstart is the smallest shardjob program, the one shown in the
// README's Go quick start: one job, defined in Go, on a registry that needs
// nothing installed.
//
// From the repository root:
//
//	go run ./example/quickstart   # Ctrl-C to stop
//
// With no registry named it starts an etcd member inside the process
// (package regcenter/embedded), its data in a temporary directory removed
// at the end, and prints that directory. A second copy started with
// SHARDJOB_REGCENTER_EMBEDDEDDIR set to it joins the first (the directory
// holds the member's address and credentials), and the two share the job's
// four items; the first copy hosts the registry, so the others lose it when
// it stops. SHARDJOB_REGCENTER_ETCD (an etcd cluster)
// or SHARDJOB_REGCENTER_SERVERS (ZooKeeper), comma-separated host:port
// lists, name a registry of yours instead.
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
	"github.com/shardjob/shardjob/regcenter/embedded"
	// The registries regcenter.Open may be asked for below.
	_ "github.com/shardjob/shardjob/regcenter/etcd"
	_ "github.com/shardjob/shardjob/regcenter/zookeeper"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	// One registry center (one session) and one scheduler per process.
	// SHARDJOB_REGCENTER_ETCD (etcd) or SHARDJOB_REGCENTER_SERVERS
	// (ZooKeeper) names the registry; with neither, an etcd member runs
	// inside this process, its data in a directory removed at the end.
	cfg := regcenter.Config{Namespace: "shop"}
	if etcd := os.Getenv("SHARDJOB_REGCENTER_ETCD"); etcd != "" {
		cfg.Etcd = strings.Split(etcd, ",")
	}
	if zk := os.Getenv("SHARDJOB_REGCENTER_SERVERS"); zk != "" {
		cfg.Servers = strings.Split(zk, ",")
	}
	cfg.EmbeddedDir = os.Getenv("SHARDJOB_REGCENTER_EMBEDDEDDIR") // another copy's member
	var rc regcenter.Center
	var err error
	if len(cfg.Etcd) == 0 && len(cfg.Servers) == 0 && cfg.EmbeddedDir == "" {
		dir, err := os.MkdirTemp("", "shardjob-quickstart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir) // after rc.Close below
		member, err := embedded.New(ctx, embedded.Config{Dir: dir, Namespace: cfg.Namespace})
		if err != nil {
			return err
		}
		fmt.Printf("registry: etcd inside this process; another copy joins it with SHARDJOB_REGCENTER_EMBEDDEDDIR=%s\n", dir)
		rc = member
	} else if rc, err = regcenter.Open(ctx, cfg); err != nil {
		return err
	}
	defer rc.Close()
	sched, err := job.NewScheduler(rc)
	if err != nil {
		return err
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
		return err
	}
	if err := sched.Start(ctx); err != nil {
		return err
	}

	<-ctx.Done() // Ctrl-C or SIGTERM: let running items finish, leave the cluster
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return sched.Shutdown(shutdownCtx)
}
