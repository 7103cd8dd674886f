package etcdtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/shardjob/shardjob/internal/testing/testserver"
)

// Options configures a cluster. The zero value runs one member inside the
// test process, in a temporary directory.
type Options struct {
	// Size is the number of members. 1 (the default) runs the member inside
	// this process; more run each member in a process of its own, so that a
	// test can kill, pause and restart them.
	Size int
	// Processes runs even a single member in a process of its own.
	Processes bool
	// Dir holds each member's data and log (Dir/memberN). Default: a new
	// temporary directory, removed by Close. A Dir you give is kept.
	Dir string
	// Logger receives the cluster's start/stop events at info level.
	// Default: discard. Members log to Dir/memberN/member.log.
	Logger *slog.Logger
	// TLS, when set, serves clients over TLS only. See [WithTLS].
	TLS *TLSOptions
	// RootPassword, when set, turns on etcd's authentication: the user
	// "root" has this password and every right. See [WithAuth].
	RootPassword string
}

// WithSize sets [Options.Size]; for use with [Start].
func WithSize(n int) func(*Options) { return func(o *Options) { o.Size = n } }

// WithAuth turns on authentication with a root user whose password is
// password (see [Cluster.Client] for a client with its rights).
func WithAuth(password string) func(*Options) {
	return func(o *Options) { o.RootPassword = password }
}

// token is the members' initial-cluster token.
const token = "etcdtest"

// Cluster is a running etcd cluster for tests. Its methods are safe for
// concurrent use; start and stop operations run one at a time.
type Cluster struct {
	opts   Options
	dir    string
	ownDir bool
	log    *slog.Logger
	tls    *serverTLS

	members []*member

	opMu sync.Mutex // serializes start/stop/close

	mu          sync.Mutex // guards member.proc, member.local, closed, authEnabled
	closed      bool
	authEnabled bool
}

type member struct {
	idx        int
	name       string
	dir        string
	clientPort int
	peerPort   int
	state      string // "new" until it first started, then "existing"
	proc       *testserver.Process
	local      *embed.Etcd // the in-process member
}

func (m *member) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.clientPort)) }

// Start starts a cluster for a test, fails the test if it cannot, and
// closes the cluster when the test ends.
//
//	cluster := etcdtest.Start(t)                       // one member, in-process
//	cluster := etcdtest.Start(t, etcdtest.WithSize(3)) // three processes
func Start(tb testing.TB, opts ...func(*Options)) *Cluster {
	tb.Helper()
	return testserver.StartForTest(tb, "etcdtest", StartCluster, opts)
}

// RunTests is for a package's TestMain: it starts a cluster, stores it in
// *c, runs the tests and closes the cluster, returning the exit code.
//
//	var cluster *etcdtest.Cluster
//
//	func TestMain(m *testing.M) { os.Exit(etcdtest.RunTests(m, &cluster)) }
func RunTests(m interface{ Run() int }, c **Cluster, opts ...func(*Options)) int {
	return testserver.RunTests(m, c, "etcdtest", StartCluster, opts)
}

// StartCluster starts a cluster and waits until every member serves with a
// leader (at most two minutes if ctx has no deadline). On error nothing is
// left running. The caller must Close the cluster.
func StartCluster(ctx context.Context, o Options) (*Cluster, error) {
	if o.Size == 0 {
		o.Size = 1
	}
	if o.Size < 0 {
		return nil, fmt.Errorf("etcdtest: size %d must be positive", o.Size)
	}
	if o.Size > 1 {
		o.Processes = true
	}
	c := &Cluster{opts: o, log: o.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "etcdtest-")
		if err != nil {
			return nil, fmt.Errorf("etcdtest: %w", err)
		}
		c.dir, c.ownDir = d, true
	} else {
		if err := os.MkdirAll(o.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("etcdtest: %w", err)
		}
		c.dir = o.Dir
	}
	fail := func(err error) (*Cluster, error) {
		c.Close()
		return nil, err
	}
	if o.TLS != nil {
		t, err := makeTLS(c.dir, o.TLS.ClientCertAuth)
		if err != nil {
			return fail(err)
		}
		c.tls = t
	}
	ports, err := freePorts(2 * o.Size)
	if err != nil {
		return fail(err)
	}
	for i := range o.Size {
		m := &member{idx: i, name: fmt.Sprintf("member%d", i+1), clientPort: ports[2*i], peerPort: ports[2*i+1], state: "new"}
		m.dir = filepath.Join(c.dir, m.name)
		if err := os.MkdirAll(m.dir, 0o700); err != nil {
			return fail(fmt.Errorf("etcdtest: %w", err))
		}
		c.members = append(c.members, m)
	}
	ctx, cancel := testserver.WithDefaultTimeout(ctx)
	defer cancel()
	c.opMu.Lock()
	defer c.opMu.Unlock()
	for _, m := range c.members {
		if err := c.launch(ctx, m); err != nil {
			return fail(err)
		}
	}
	if err := c.waitServing(ctx); err != nil {
		return fail(err)
	}
	if o.RootPassword != "" {
		if err := c.enableAuth(ctx); err != nil {
			return fail(err)
		}
	}
	c.log.Info("etcdtest: cluster serving", "members", len(c.members), "endpoints", c.Endpoints())
	return c, nil
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close() // held only to keep the ports distinct
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("etcdtest: %w", err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

func (c *Cluster) scheme() string {
	if c.tls != nil {
		return "https"
	}
	return "http"
}

// spec describes member m for starting it.
func (c *Cluster) spec(m *member) spec {
	var initial []string
	for _, o := range c.members {
		initial = append(initial, fmt.Sprintf("%s=http://127.0.0.1:%d", o.name, o.peerPort))
	}
	s := spec{
		Name:           m.name,
		Dir:            m.dir,
		ClientURL:      fmt.Sprintf("%s://%s", c.scheme(), m.addr()),
		PeerURL:        fmt.Sprintf("http://127.0.0.1:%d", m.peerPort),
		InitialCluster: strings.Join(initial, ","),
		ClusterState:   m.state,
		Token:          token,
	}
	if c.tls != nil {
		s.CertFile, s.KeyFile, s.CAFile, s.ClientCertAuth = c.tls.certFile, c.tls.keyFile, c.tls.client.CAFile, c.tls.clientCertAuth
	}
	return s
}

// launch starts m: in this process, or as a process of its own.
func (c *Cluster) launch(ctx context.Context, m *member) error {
	s := c.spec(m)
	if !c.opts.Processes {
		limit := testserver.DefaultTimeout
		if dl, ok := ctx.Deadline(); ok {
			limit = time.Until(dl)
		}
		e, err := s.start(limit)
		if err != nil {
			return err
		}
		c.mu.Lock()
		m.local = e
		m.state = "existing"
		c.mu.Unlock()
		return nil
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("etcdtest: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("etcdtest: finding the test binary to run a member: %w", err)
	}
	out, err := os.OpenFile(filepath.Join(m.dir, "process.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("etcdtest: %w", err)
	}
	defer out.Close() // the child has its own descriptor
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), memberEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = out, out
	p, err := testserver.Start(cmd, nil)
	if err != nil {
		return fmt.Errorf("etcdtest: starting %s: %w", m.name, err)
	}
	c.mu.Lock()
	m.proc = p
	m.state = "existing"
	c.mu.Unlock()
	c.log.Info("etcdtest: member started", "member", m.name, "pid", p.PID, "client", m.addr())
	return nil
}

// stop stops m: gracefully (SIGTERM, then SIGKILL after testserver.StopGrace) or by
// SIGKILL. An in-process member is closed either way.
func (c *Cluster) stop(m *member, graceful bool) error {
	c.mu.Lock()
	p, local := m.proc, m.local
	m.proc, m.local = nil, nil
	c.mu.Unlock()
	if local != nil {
		local.Close()
		return nil
	}
	if p == nil || p.Exited() {
		return nil
	}
	if err := p.Stop(graceful); err != nil {
		return fmt.Errorf("etcdtest: %s: %w", m.name, err)
	}
	return nil
}

func (c *Cluster) member(i int) (*member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("etcdtest: cluster closed")
	}
	if i < 0 || i >= len(c.members) {
		return nil, fmt.Errorf("etcdtest: no member %d (size %d)", i, len(c.members))
	}
	return c.members[i], nil
}

func (c *Cluster) running(m *member) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return m.local != nil || (m.proc != nil && !m.proc.Exited())
}

// Endpoints returns each member's client address, "127.0.0.1:port", in
// member order, as Config.Etcd takes them. They stay the same across
// restarts.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.addr()
	}
	return out
}

// ConnectString returns the endpoints joined by commas.
func (c *Cluster) ConnectString() string { return strings.Join(c.Endpoints(), ",") }

// Size returns the number of members.
func (c *Cluster) Size() int { return len(c.members) }

// TLS returns the files a client needs, and false without [Options.TLS].
func (c *Cluster) TLS() (TLSFiles, bool) {
	if c.tls == nil {
		return TLSFiles{}, false
	}
	return c.tls.client, true
}

// PID returns the process id of member i, or 0 when it is not running in a
// process of its own.
func (c *Cluster) PID(i int) int {
	m, err := c.member(i)
	if err != nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.proc == nil || m.proc.Exited() {
		return 0
	}
	return m.proc.PID
}

// Stop stops member i gracefully. Stopping a stopped member does nothing.
func (c *Cluster) Stop(i int) error { return c.stopMember(i, true) }

// Kill kills member i with SIGKILL, like a crash (an in-process member is
// closed instead).
func (c *Cluster) Kill(i int) error { return c.stopMember(i, false) }

func (c *Cluster) stopMember(i int, graceful bool) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	m, err := c.member(i)
	if err != nil {
		return err
	}
	c.log.Info("etcdtest: stopping member", "member", m.name, "graceful", graceful)
	return c.stop(m, graceful)
}

// Pause freezes member i's process with SIGSTOP, as a long GC pause or a
// hung host would: its connections stay open and nothing answers. Resume
// continues it. Only members in processes of their own can be paused.
func (c *Cluster) Pause(i int) error { return c.signal(i, testserver.Stop) }

// Resume continues member i after Pause.
func (c *Cluster) Resume(i int) error { return c.signal(i, testserver.Cont) }

func (c *Cluster) signal(i int, sig testserver.Signal) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	c.mu.Lock()
	p := m.proc
	c.mu.Unlock()
	if p == nil || p.Exited() {
		return fmt.Errorf("etcdtest: %s is not running in a process of its own", m.name)
	}
	return p.Signal(sig)
}

// StartMember starts stopped member i again with its data and ports, and
// waits until it serves with a leader (which needs a quorum running).
func (c *Cluster) StartMember(ctx context.Context, i int) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	ctx, cancel := testserver.WithDefaultTimeout(ctx)
	defer cancel()
	m, err := c.member(i)
	if err != nil {
		return err
	}
	if c.running(m) {
		return fmt.Errorf("etcdtest: %s is running", m.name)
	}
	if err := c.launch(ctx, m); err != nil {
		return err
	}
	return c.waitMember(ctx, m)
}

// Restart stops member i gracefully and starts it again.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if err := c.Stop(i); err != nil {
		return err
	}
	return c.StartMember(ctx, i)
}

// RestartAll stops every member, then starts them all and waits until they
// serve.
func (c *Cluster) RestartAll(ctx context.Context) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	ctx, cancel := testserver.WithDefaultTimeout(ctx)
	defer cancel()
	for _, m := range c.members {
		if err := c.stop(m, true); err != nil {
			return err
		}
	}
	for _, m := range c.members {
		if err := c.launch(ctx, m); err != nil {
			return err
		}
	}
	return c.waitServing(ctx)
}

// RestartWiped stops member i, deletes its data, and brings it back as a
// new member of the cluster (removed and added again, as an operator
// replaces a member whose disk was lost); it catches up from the others.
// The cluster needs a quorum without it.
func (c *Cluster) RestartWiped(ctx context.Context, i int) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	ctx, cancel := testserver.WithDefaultTimeout(ctx)
	defer cancel()
	m, err := c.member(i)
	if err != nil {
		return err
	}
	if len(c.members) < 2 {
		return errors.New("etcdtest: RestartWiped needs a cluster of several members")
	}
	if err := c.stop(m, false); err != nil {
		return err
	}
	cli, err := c.client(ctx, c.othersEndpoints(m))
	if err != nil {
		return err
	}
	defer cli.Close()
	list, err := cli.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("etcdtest: member list: %w", err)
	}
	for _, x := range list.Members {
		if x.Name == m.name || (x.Name == "" && len(x.PeerURLs) > 0 && strings.HasSuffix(x.PeerURLs[0], ":"+strconv.Itoa(m.peerPort))) {
			if _, err := cli.MemberRemove(ctx, x.ID); err != nil {
				return fmt.Errorf("etcdtest: removing %s: %w", m.name, err)
			}
		}
	}
	if err := os.RemoveAll(filepath.Join(m.dir, "data")); err != nil {
		return fmt.Errorf("etcdtest: wiping %s: %w", m.name, err)
	}
	if _, err := cli.MemberAdd(ctx, []string{fmt.Sprintf("http://127.0.0.1:%d", m.peerPort)}); err != nil {
		return fmt.Errorf("etcdtest: adding %s again: %w", m.name, err)
	}
	m.state = "existing"
	c.log.Info("etcdtest: member wiped and added again", "member", m.name)
	if err := c.launch(ctx, m); err != nil {
		return err
	}
	return c.waitMember(ctx, m)
}

func (c *Cluster) othersEndpoints(m *member) []string {
	var out []string
	for _, o := range c.members {
		if o != m && c.running(o) {
			out = append(out, o.addr())
		}
	}
	return out
}

// Leader waits until a running member reports a leader, and returns the
// leader's index.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	ctx, cancel := testserver.WithDefaultTimeout(ctx)
	defer cancel()
	for {
		for _, m := range c.members {
			if !c.running(m) {
				continue
			}
			st, err := c.status(ctx, m)
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				return m.idx, nil
			}
		}
		if err := testserver.Sleep(ctx, testserver.PollInterval); err != nil {
			return -1, fmt.Errorf("etcdtest: no leader: %w", err)
		}
	}
}

// WaitServing waits until every running member serves with a leader.
func (c *Cluster) WaitServing(ctx context.Context) error {
	ctx, cancel := testserver.WithDefaultTimeout(ctx)
	defer cancel()
	return c.waitServing(ctx)
}

func (c *Cluster) waitServing(ctx context.Context) error {
	for _, m := range c.members {
		if !c.running(m) {
			continue
		}
		if err := c.waitMember(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) waitMember(ctx context.Context, m *member) error {
	for {
		c.mu.Lock()
		p := m.proc
		c.mu.Unlock()
		if p != nil && p.Exited() {
			return fmt.Errorf("etcdtest: %s exited: %v (see %s)", m.name, p.Err(), filepath.Join(m.dir, "member.log"))
		}
		st, err := c.status(ctx, m)
		if err == nil && st.Leader != 0 {
			return nil
		}
		if err := testserver.Sleep(ctx, testserver.PollInterval); err != nil {
			return fmt.Errorf("etcdtest: %s not serving: %w (see %s)", m.name, err, filepath.Join(m.dir, "member.log"))
		}
	}
}

func (c *Cluster) status(ctx context.Context, m *member) (*clientv3.StatusResponse, error) {
	cli, err := c.client(ctx, []string{m.addr()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return cli.Status(sctx, m.addr())
}

// client connects to endpoints with the cluster's TLS and root
// credentials.
func (c *Cluster) client(ctx context.Context, endpoints []string) (*clientv3.Client, error) {
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), Context: context.WithoutCancel(ctx)}
	if c.tls != nil {
		t, err := c.tls.client.Config()
		if err != nil {
			return nil, err
		}
		cfg.TLS = t
	}
	c.mu.Lock()
	authOn := c.opts.RootPassword != "" && c.authEnabled
	c.mu.Unlock()
	if authOn {
		cfg.Username, cfg.Password = "root", c.opts.RootPassword
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: client: %w", err)
	}
	return cli, nil
}

// Client returns a client of the whole cluster with every right (root,
// when authentication is on), for a test to set up users, compact, or
// look at keys. The caller closes it.
func (c *Cluster) Client(ctx context.Context) (*clientv3.Client, error) {
	return c.client(ctx, c.Endpoints())
}

// enableAuth creates the root user and turns authentication on.
func (c *Cluster) enableAuth(ctx context.Context) error {
	cli, err := c.client(ctx, c.Endpoints())
	if err != nil {
		return err
	}
	defer cli.Close()
	if _, err := cli.UserAdd(ctx, "root", c.opts.RootPassword); err != nil {
		return fmt.Errorf("etcdtest: adding root: %w", err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		return fmt.Errorf("etcdtest: granting root: %w", err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		return fmt.Errorf("etcdtest: enabling auth: %w", err)
	}
	c.mu.Lock()
	c.authEnabled = true
	c.mu.Unlock()
	return nil
}

// Close stops every member and, if StartCluster made the directory,
// removes it. It is idempotent.
func (c *Cluster) Close() error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
	for _, m := range c.members {
		if err := c.stop(m, true); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ownDir {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("etcdtest: %w", err))
		}
	}
	return errors.Join(errs...)
}
