package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// netnsPrefix names the harness's network namespaces; the suffix is the
// harness's pid, so that a later run can remove those of a run that died.
const netnsPrefix = "shardjob-chaos-"

// netns is a network namespace joined to the host by a veth pair:
// 10.213.a.1/30 on the host side, 10.213.a.2/30 inside. A process inside
// reaches ZooKeeper (which listens on 127.0.0.1 only) through a forwarder
// listening on the host side's address. Taking the host side down cuts the
// namespace off: a partition.
type netns struct {
	Name   string
	HostIf string // host end of the veth pair
	NsIf   string // namespace end
	HostIP string
	NsIP   string
}

// runIP runs ip(8) with args, returning its combined output in the error.
func runIP(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func ipOutput(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).Output()
	if err != nil {
		return "", fmt.Errorf("ip %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// removeStaleNetns deletes namespaces left by harness runs whose process no
// longer exists (a run killed before it could clean up), and their veths.
func removeStaleNetns(ctx context.Context, logf func(string, ...any)) {
	out, err := ipOutput(ctx, "netns", "list")
	if err != nil {
		return
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(netnsPrefix) + `(\d+)\b`)
	for _, line := range strings.Split(out, "\n") {
		m := re.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue // its harness still runs
		}
		logf("removing network namespace %s left by a harness that is gone", m[0])
		_ = runIP(ctx, "netns", "del", m[0])
		_ = runIP(ctx, "link", "del", "chh"+m[1])
	}
}

// setupNetns creates the namespace and the veth pair. On error nothing is
// left behind.
func setupNetns(ctx context.Context) (n *netns, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("not root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errors.New("ip(8) not found")
	}
	pid := os.Getpid()
	subnet, err := freeSubnet(ctx, pid)
	if err != nil {
		return nil, err
	}
	n = &netns{
		Name:   fmt.Sprintf("%s%d", netnsPrefix, pid),
		HostIf: fmt.Sprintf("chh%d", pid),
		NsIf:   fmt.Sprintf("chn%d", pid),
		HostIP: fmt.Sprintf("10.213.%d.1", subnet),
		NsIP:   fmt.Sprintf("10.213.%d.2", subnet),
	}
	defer func() {
		if err != nil {
			n.teardown()
			n = nil
		}
	}()
	steps := [][]string{
		{"netns", "add", n.Name},
		{"link", "add", n.HostIf, "type", "veth", "peer", "name", n.NsIf},
		{"link", "set", n.NsIf, "netns", n.Name},
		{"addr", "add", n.HostIP + "/30", "dev", n.HostIf},
		{"link", "set", n.HostIf, "up"},
		{"netns", "exec", n.Name, "ip", "addr", "add", n.NsIP + "/30", "dev", n.NsIf},
		{"netns", "exec", n.Name, "ip", "link", "set", n.NsIf, "up"},
		{"netns", "exec", n.Name, "ip", "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := runIP(ctx, s...); err != nil {
			return n, err
		}
	}
	return n, nil
}

// freeSubnet picks a third octet for 10.213.x.0/30 not in use on the host.
func freeSubnet(ctx context.Context, pid int) (int, error) {
	out, err := ipOutput(ctx, "-4", "-o", "addr", "show")
	if err != nil {
		return 0, err
	}
	for i := 0; i < 250; i++ {
		x := (pid + i) % 250
		if !strings.Contains(out, fmt.Sprintf(" 10.213.%d.", x)) {
			return x, nil
		}
	}
	return 0, errors.New("no free 10.213.x.0/30 subnet")
}

// command wraps name/args so that they run inside the namespace.
func (n *netns) command(name string, args ...string) (string, []string) {
	return "ip", append([]string{"netns", "exec", n.Name, name}, args...)
}

// partition cuts the namespace off the host.
func (n *netns) partition(ctx context.Context) error {
	return runIP(ctx, "link", "set", n.HostIf, "down")
}

// heal reconnects it.
func (n *netns) heal(ctx context.Context) error {
	return runIP(ctx, "link", "set", n.HostIf, "up")
}

// teardown deletes the namespace and the veth pair (deleting either end
// deletes both). It is safe to call on a half-made netns and more than once.
func (n *netns) teardown() {
	ctx := context.Background()
	_ = runIP(ctx, "netns", "del", n.Name)
	_ = runIP(ctx, "link", "del", n.HostIf)
}
