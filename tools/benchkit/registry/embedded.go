package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	ossignal "os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testserver"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/embedded"
)

// memberEnv carries the Dir of an embedded member to a process started to
// host it: the benchmark's own binary, started again (see init). The
// member runs as package embedded runs it for a user's program — the same
// defaults, authentication on — but in a process of its own, so that its
// CPU and memory are measured apart from the benchmark's and the
// instances'.
const memberEnv = "SHARDJOB_BENCH_EMBEDDED_MEMBER"

// init hosts an embedded member when the process was started as one: it
// serves until SIGTERM or SIGINT and exits without running the program.
func init() {
	dir := os.Getenv(memberEnv)
	if dir == "" {
		return
	}
	os.Exit(hostMember(dir))
}

// hostMember runs the member of dir until a signal; the exit code.
func hostMember(dir string) int {
	sigs := make(chan os.Signal, 1)
	ossignal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	s, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "embedded member:", err)
		return 1
	}
	<-sigs
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "embedded member: close:", err)
		return 1
	}
	return 0
}

// embeddedMember is an embedded member hosted by a process of its own.
type embeddedMember struct {
	dir      string
	proc     *testserver.Process
	endpoint string
}

// startEmbedded starts the benchmark's binary again as the host of an
// embedded member with its data in dir and waits, within ctx, for the
// member's endpoint file.
func startEmbedded(ctx context.Context, dir string) (*embeddedMember, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("embedded member: finding this program to host it: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded member: %w", err)
	}
	out, err := os.OpenFile(filepath.Join(filepath.Dir(dir), "embedded-member.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded member: %w", err)
	}
	defer out.Close() // the child has its own descriptor
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), memberEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = out, out
	p, err := testserver.Start(cmd, nil)
	if err != nil {
		return nil, fmt.Errorf("embedded member: %w", err)
	}
	m := &embeddedMember{dir: dir, proc: p}
	endpointFile := filepath.Join(dir, regcenter.EmbeddedEndpointFile)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		raw, err := os.ReadFile(endpointFile)
		if err == nil && strings.TrimSpace(string(raw)) != "" {
			m.endpoint = strings.TrimSpace(string(raw))
			return m, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, errors.Join(fmt.Errorf("embedded member: %w", err), m.close())
		}
		select {
		case <-p.Done():
			return nil, fmt.Errorf("embedded member exited before serving (see %s): %v", out.Name(), p.Err())
		case <-ctx.Done():
			return nil, errors.Join(fmt.Errorf("embedded member: not serving: %w", ctx.Err()), m.close())
		case <-tick.C:
		}
	}
}

// close stops the member's host gracefully (SIGTERM, SIGKILL after the
// grace).
func (m *embeddedMember) close() error { return m.proc.Stop(true) }
