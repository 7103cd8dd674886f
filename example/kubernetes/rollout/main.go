// Command rollout replays on this machine the rolling update a Kubernetes
// Deployment makes of shardjob run pods (example/kubernetes/app.yaml:
// maxSurge 1, maxUnavailable 0), on the embedded default: nothing to
// install. It builds the shardjob command, starts three instances with
// --health, then three times starts a new instance with a new server id,
// waits for its readiness probe and its first run, and stops the oldest
// with SIGTERM. A script job logs every run; the last line says whether
// any fire of the update's window was lost, ran twice, or ran on two
// instances at once.
//
//	go run ./example/kubernetes/rollout     # from the repository's root; about half a minute
//
// The instances share one embedded etcd member: the first hosts it, and
// when it is stopped another takes the member over (package embedded's
// Join), so the update also moves the registry from process to process.
// Across hosts, as in a cluster, name etcd or ZooKeeper instead.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/internal/rollout"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rollout:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "shardjob-rollout-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			fmt.Fprintln(os.Stderr, "the instances' logs are kept in", dir)
			return
		}
		os.RemoveAll(dir)
	}()

	fmt.Println("building the shardjob command ...")
	bin := filepath.Join(dir, "shardjob")
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	out, err := exec.CommandContext(bctx, "go", "build", "-o", bin, "./cmd/shardjob").CombinedOutput()
	cancel()
	if err != nil {
		return fmt.Errorf("go build ./cmd/shardjob (run this from the repository's root): %v\n%s", err, out)
	}
	rep, err := rollout.Run(ctx, rollout.Options{Bin: bin, Dir: dir,
		Registry: []string{"embeddedDir: " + filepath.Join(dir, "member")}, Progress: os.Stdout})
	if err != nil {
		return err
	}
	fmt.Println(rep)
	for _, e := range rep.TeardownErrors {
		// The last instances share the embedded member: one that stops
		// while another hosts it, or during a take-over, may find the
		// registry gone and say so in its exit.
		fmt.Println("stopping the new instances:", e)
	}
	if !rep.OK() {
		return fmt.Errorf("the update lost, repeated or overlapped fires: %v", rep.Examples)
	}
	fmt.Println("no fire lost, none run twice, no item on two instances at once")
	return nil
}
