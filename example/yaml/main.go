// Command yaml runs the jobs defined in example/yaml/jobs.yaml, binding each
// to a Go handler by name, until it is stopped.
//
// From the repository root:
//
//	go run ./example/yaml                          # an embedded etcd: nothing to install
//	go run ./example/yaml -zk 127.0.0.1:2181       # a running ZooKeeper
//	go run ./example/yaml -etcd 127.0.0.1:2379     # a running etcd cluster
//	make zk-start && go run ./example/yaml -file-registry  # the file's own servers (127.0.0.1:2181)
//	go run ./example/yaml -f my-jobs.yaml          # another file
//	go run ./example/yaml -f example/yaml/retries.yaml  # retries with backoff (make retries-demo)
//
// The file's regcenter section gives the namespace and timeouts. Its
// servers are used with -file-registry, or when SHARDJOB_REGCENTER_SERVERS,
// SHARDJOB_REGCENTER_ETCD or SHARDJOB_REGCENTER_PG names the registry
// (jobfile.LoadFile reads them);
// -zk and -etcd replace them. Otherwise the program runs a single-member
// etcd inside the process, its data in a temporary directory removed at
// the end. Stop it with Ctrl-C (SIGINT) or SIGTERM: it shuts down
// gracefully.
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
	"github.com/shardjob/shardjob/jobfile"
	"github.com/shardjob/shardjob/regcenter"
)

// handlers are the Go implementations a job file can name, by name.
var handlers = map[string]job.Job{
	"orders":  job.SimpleFunc(syncOrders),
	"cleanup": job.SimpleFunc(cleanup),
	"flaky":   job.SimpleFunc(flaky),
}

func main() {
	file := flag.String("f", "", "job `file` (default: example/yaml/jobs.yaml, or jobs.yaml in the current directory)")
	fileRegistry := flag.Bool("file-registry", false, "use the registry the file's regcenter section names")
	reg := demoreg.Register(nil)
	id := flag.String("id", "", "server `id` of this instance (default: one per process, the host's address and pid)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *file, *fileRegistry, reg, *id); err != nil {
		fmt.Fprintln(os.Stderr, "yaml:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, path string, fileRegistry bool, flags *demoreg.Flags, id string) (err error) {
	if path == "" {
		path = "example/yaml/jobs.yaml"
		if _, err := os.Stat(path); err != nil {
			path = "jobs.yaml"
		}
	}
	// LoadFile reports every problem of the file at once, with line numbers.
	file, err := jobfile.LoadFile(path)
	if err != nil {
		return err
	}
	for _, spec := range file.Jobs {
		slog.Info("job defined", "file", path, "job", spec.Name, "handler", spec.HandlerName(), "cron", spec.Cron, "items", spec.ShardingTotalCount)
	}

	cfg := file.Regcenter
	fromEnv := false
	for _, v := range []string{"SERVERS", "ETCD", "URL", "PG"} {
		fromEnv = fromEnv || os.Getenv(jobfile.EnvPrefix+"_REGCENTER_"+v) != ""
	}
	if !fileRegistry && !fromEnv || flags.Given() {
		// -zk, -etcd, -pg, or the embedded etcd, with the file's other settings.
		reg, err := flags.Start(ctx, cfg.Namespace)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, reg.Close()) }()
		rcfg := reg.Config()
		cfg.Servers, cfg.Etcd, cfg.URL, cfg.EmbeddedDir = rcfg.Servers, rcfg.Etcd, rcfg.URL, ""
		if reg.Embedded() {
			// The embedded member requires its own credentials.
			cfg.Digest, cfg.DigestFile = rcfg.Digest, ""
		}
		slog.Info("registry", "is", reg.String())
	}
	rc, err := regcenter.Open(ctx, cfg)
	if errors.Is(err, regcenter.ErrUnreachable) {
		return fmt.Errorf("%w\nStart it (make zk-start runs a ZooKeeper on 127.0.0.1:2181), or run without -file-registry on an embedded etcd", err)
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
	if err := jobfile.Add(ctx, sched, file.Jobs, file.Regcenter.Namespace, jobfile.Options{Handlers: handlers}); err != nil {
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

// flaky fails the first two attempts of every fire and succeeds on the
// third: the job's retry policy (example/yaml/retries.yaml) runs it again
// after a backoff, and ShardingContext.Attempt counts.
func flaky(ctx context.Context, sc job.ShardingContext) error {
	if err := sc.StillOwner(); err != nil {
		return err
	}
	if sc.Attempt < 3 {
		fmt.Printf("%s  %s item %d fire %s attempt %d: failing on purpose\n", time.Now().Format("15:04:05.000"), sc.JobName, sc.Item, sc.FireTime.Format("15:04:05"), sc.Attempt)
		return fmt.Errorf("attempt %d fails on purpose", sc.Attempt)
	}
	fmt.Printf("%s  %s item %d fire %s attempt %d: done\n", time.Now().Format("15:04:05.000"), sc.JobName, sc.Item, sc.FireTime.Format("15:04:05"), sc.Attempt)
	return nil
}
