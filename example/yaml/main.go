// Command yaml runs the jobs defined in example/yaml/jobs.yaml, binding each
// to a Go handler by name, until it is stopped.
//
// The file's regcenter section names the ZooKeeper to use (127.0.0.1:2181;
// SHARDJOB_REGCENTER_SERVERS overrides it). From the repository root:
//
//	make zk-start && go run ./example/yaml   # a ZooKeeper on 127.0.0.1:2181
//	go run ./example/yaml -local-zk          # start a local ZooKeeper if the file's is unreachable
//	go run ./example/yaml -f my-jobs.yaml    # another file
//
// Without -local-zk an unreachable ZooKeeper is an error: the program never
// starts a server of its own unless asked to. Stop it with Ctrl-C (SIGINT)
// or SIGTERM: it shuts down gracefully.
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

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// handlers are the Go implementations a job file can name, by name.
var handlers = map[string]job.Job{
	"orders":  job.SimpleFunc(syncOrders),
	"cleanup": job.SimpleFunc(cleanup),
}

func main() {
	file := flag.String("f", "", "job `file` (default: example/yaml/jobs.yaml, or jobs.yaml in the current directory)")
	localZK := flag.Bool("local-zk", false, "start a local ZooKeeper (regcenter/zktest) if the file's servers are unreachable")
	id := flag.String("id", "", "server `id` of this instance (default: the host's IP address)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *file, *localZK, *id); err != nil {
		fmt.Fprintln(os.Stderr, "yaml:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, path string, localZK bool, id string) error {
	if path == "" {
		path = "example/yaml/jobs.yaml"
		if _, err := os.Stat(path); err != nil {
			path = "jobs.yaml"
		}
	}
	// LoadFile reports every problem of the file at once, with line numbers.
	file, err := job.LoadFile(path)
	if err != nil {
		return err
	}
	for _, spec := range file.Jobs {
		slog.Info("job defined", "file", path, "job", spec.Name, "handler", spec.HandlerName(), "cron", spec.Cron, "items", spec.ShardingTotalCount)
	}

	rc, err := regcenter.NewZooKeeper(ctx, file.Regcenter)
	if errors.Is(err, regcenter.ErrUnreachable) && localZK {
		slog.Warn("ZooKeeper from the file is unreachable; -local-zk is set, so starting a local one", "servers", file.Regcenter.Servers)
		zk, zerr := zktest.StartCluster(ctx, zktest.Options{})
		if zerr != nil {
			return zerr // says how to install ZooKeeper if it is missing
		}
		defer zk.Close()
		cfg := file.Regcenter
		cfg.Servers = zk.Servers()
		slog.Info("local ZooKeeper started; it goes away when this program ends", "servers", cfg.Servers)
		rc, err = regcenter.NewZooKeeper(ctx, cfg)
	}
	if errors.Is(err, regcenter.ErrUnreachable) {
		return fmt.Errorf("%w\nStart one (make zk-start runs one on 127.0.0.1:2181), set SHARDJOB_REGCENTER_SERVERS, or rerun with -local-zk to start a local ZooKeeper", err)
	}
	if err != nil {
		return err
	}
	defer rc.Close()

	var opts []job.Option
	if id != "" {
		opts = append(opts, job.WithServerID(id))
	}
	sched, err := job.NewScheduler(rc, opts...)
	if err != nil {
		return err
	}
	// Each job is bound to handlers[spec.HandlerName()]; a missing handler
	// is reported as job.ErrUnknownHandler.
	if err := sched.AddSpecs(ctx, file.Jobs, handlers); err != nil {
		return err
	}
	if err := sched.Start(ctx); err != nil {
		return err
	}
	slog.Info("running; stop with Ctrl-C", "server", sched.ServerID(), "namespace", file.Regcenter.Namespace)

	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return sched.Shutdown(shutdownCtx)
}

func syncOrders(ctx context.Context, sc job.ShardingContext) error {
	if err := sc.StillOwner(); err != nil {
		return err
	}
	fmt.Printf("%s  %s item %d (%s) %s\n", time.Now().Format("15:04:05"), sc.JobName, sc.Item, sc.ItemParameter, sc.JobParameter)
	return nil
}

func cleanup(ctx context.Context, sc job.ShardingContext) error {
	if err := sc.StillOwner(); err != nil {
		return err
	}
	fmt.Printf("%s  %s item %d of %d\n", time.Now().Format("15:04:05"), sc.JobName, sc.Item, sc.ShardingTotalCount)
	return nil
}
