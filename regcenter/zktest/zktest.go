package zktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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

	"github.com/shardjob/shardjob/internal/testing/testserver"
)

// Options configures a cluster. The zero value starts one standalone server
// with a 200ms tick in a temporary directory.
type Options struct {
	// Size is the number of members: 1 runs a standalone server (the
	// default); 3 (or any n > 1) runs an ensemble whose quorum is n/2+1.
	Size int
	// TickTime is ZooKeeper's time unit: sessions may be as short as two
	// ticks and at most 60s. Default 200ms, so 400ms sessions are allowed.
	TickTime time.Duration
	// Dir holds each member's config, data and log (Dir/zkN for member
	// N-1). Default: a new temporary directory, removed by Close. A Dir you
	// give is created if needed and kept, data included.
	Dir string
	// Logger receives every line the servers print, at debug level, and the
	// cluster's own start/stop events at info level. Default: discard. The
	// servers' output always goes to Dir/zkN/server.log as well.
	Logger *slog.Logger
	// JavaOpts are extra JVM flags. They come after the defaults, so
	// "-Xmx1g" or "-Dzookeeper.x=y" override them.
	JavaOpts []string
	// TLS, when set, gives every member a TLS client port (Netty, PEM
	// key and trust stores made for the cluster) next to its plain one.
	// Default nil: plain client ports only. See [WithTLS].
	TLS *TLSOptions
}

// WithSize sets [Options.Size]; for use with [Start].
func WithSize(n int) func(*Options) {
	return func(o *Options) { o.Size = n }
}

const (
	// logTailLines is how much of a member's log an error carries.
	logTailLines = 30
	// startAttempts is how often StartCluster picks new ports when another
	// process took one between picking and binding.
	startAttempts = 3

	mainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
)

// errPortTaken marks a member that could not bind one of its ports.
var errPortTaken = errors.New("port already in use")

// Cluster is a running ZooKeeper standalone server or ensemble. Its methods
// are safe for concurrent use; start/stop operations run one at a time.
type Cluster struct {
	inst   *installation
	opts   Options
	dir    string
	ownDir bool
	log    *slog.Logger

	members []*member  // fixed once StartCluster returns
	tls     *serverTLS // nil unless Options.TLS is set

	opMu sync.Mutex // serializes start/stop/close

	mu       sync.Mutex // guards member.proc, closed, closeErr
	closed   bool
	closeErr error
}

type member struct {
	idx          int // index in Cluster.members; myid is idx+1
	dir          string
	clientPort   int
	securePort   int // TLS client port; 0 without Options.TLS
	quorumPort   int
	electionPort int
	proc         *process // nil when not started; guarded by Cluster.mu
}

func (m *member) addr() string    { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.clientPort)) }
func (m *member) tlsAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.securePort)) }
func (m *member) cfgPath() string { return filepath.Join(m.dir, "zoo.cfg") }
func (m *member) logPath() string { return filepath.Join(m.dir, "server.log") }

// process is one JVM, and where its run's output starts in the member's
// log.
type process struct {
	*testserver.Process
	logOffset int64
}

// Start starts a cluster for a test (one standalone server unless an option
// says otherwise), fails the test if it cannot, and closes the cluster when
// the test ends. Startup is bounded by two minutes.
//
//	zk := zktest.Start(t)                     // standalone
//	zk := zktest.Start(t, zktest.WithSize(3)) // ensemble
func Start(tb testing.TB, opts ...func(*Options)) *Cluster {
	tb.Helper()
	return testserver.StartForTest(tb, "zktest", StartCluster, opts)
}

// StartCluster starts a cluster and waits until every member serves (its
// srvr answer has a Mode). The wait ends when ctx does, or after two
// minutes if ctx has no deadline. On error nothing is left running. The
// caller must Close the cluster.
//
// If ZooKeeper or Java is missing the error wraps [ErrNotInstalled] and
// says how to install them.
func StartCluster(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Size == 0 {
		opts.Size = 1
	}
	if opts.Size < 0 {
		return nil, fmt.Errorf("zktest: Size %d must be at least 1", opts.Size)
	}
	if opts.TickTime == 0 {
		opts.TickTime = 200 * time.Millisecond
	}
	if opts.TickTime < time.Millisecond {
		return nil, fmt.Errorf("zktest: TickTime %v must be at least 1ms", opts.TickTime)
	}
	if opts.TLS != nil {
		switch opts.TLS.ClientAuth {
		case "":
			tlsOpts := *opts.TLS
			tlsOpts.ClientAuth = ClientAuthNone
			opts.TLS = &tlsOpts
		case ClientAuthNone, ClientAuthWant, ClientAuthNeed:
		default:
			return nil, fmt.Errorf("zktest: TLS.ClientAuth %q: use none, want or need", opts.TLS.ClientAuth)
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	inst, err := findInstallation()
	if err != nil {
		return nil, err
	}
	ctx, cancel := testserver.WithDefaultTimeout(ctx)
	defer cancel()

	c := &Cluster{inst: inst, opts: opts, dir: opts.Dir, log: log}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "zktest-"); err != nil {
			return nil, fmt.Errorf("zktest: %w", err)
		}
		c.ownDir = true
	} else if c.dir, err = filepath.Abs(c.dir); err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	if err := c.prepare(); err != nil {
		c.removeDir()
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if err = c.assignPorts(); err == nil {
			err = c.startAll(ctx)
		}
		if err == nil {
			c.log.Info("zktest: cluster serving", "servers", c.ConnectString(), "dir", c.dir)
			return c, nil
		}
		c.killAll()
		if attempt < startAttempts && errors.Is(err, errPortTaken) && ctx.Err() == nil {
			c.log.Info("zktest: a port was taken; retrying with new ports", "err", err)
			continue
		}
		c.removeDir()
		return nil, err
	}
}

// prepare creates the directory layout and the files that do not depend on
// ports.
func (c *Cluster) prepare() error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	files := map[string]string{"log4j.properties": log4jProperties, "logback.xml": logbackXML}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(c.dir, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("zktest: %w", err)
		}
	}
	if c.opts.TLS != nil {
		t, err := makeTLS(c.dir, c.opts.TLS.ClientAuth)
		if err != nil {
			return err
		}
		c.tls = t
	}
	for i := range c.opts.Size {
		m := &member{idx: i, dir: filepath.Join(c.dir, "zk"+strconv.Itoa(i+1))}
		if err := os.MkdirAll(filepath.Join(m.dir, "data"), 0o755); err != nil {
			return fmt.Errorf("zktest: %w", err)
		}
		myid := []byte(strconv.Itoa(i+1) + "\n")
		if err := os.WriteFile(filepath.Join(m.dir, "data", "myid"), myid, 0o644); err != nil {
			return fmt.Errorf("zktest: %w", err)
		}
		c.members = append(c.members, m)
	}
	return nil
}

// assignPorts gives every member three free loopback ports (four with
// TLS) and writes the configs. The listeners are all held until every port
// is picked, so the ports are distinct.
func (c *Cluster) assignPorts() error {
	per := 3
	if c.tls != nil {
		per = 4
	}
	ports, err := freePorts(per * len(c.members))
	if err != nil {
		return fmt.Errorf("zktest: picking ports: %w", err)
	}
	for i, m := range c.members {
		m.clientPort, m.quorumPort, m.electionPort = ports[per*i], ports[per*i+1], ports[per*i+2]
		if c.tls != nil {
			m.securePort = ports[per*i+3]
		}
	}
	for _, m := range c.members {
		if err := os.WriteFile(m.cfgPath(), []byte(c.config(m)), 0o644); err != nil {
			return fmt.Errorf("zktest: %w", err)
		}
	}
	return nil
}

func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// config renders zoo.cfg for m.
func (c *Cluster) config(m *member) string {
	tick := max(1, int(c.opts.TickTime/time.Millisecond))
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by zktest for member %d of %d.\n", m.idx+1, len(c.members))
	fmt.Fprintf(&b, "tickTime=%d\n", tick)
	// Generous limits (in ticks) so a slow machine still forms a quorum.
	b.WriteString("initLimit=50\nsyncLimit=25\n")
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=60000\n", 2*tick)
	fmt.Fprintf(&b, "dataDir=%s\n", filepath.Join(m.dir, "data"))
	fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=127.0.0.1\n", m.clientPort)
	b.WriteString("maxClientCnxns=0\n")
	b.WriteString("admin.enableServer=false\n4lw.commands.whitelist=*\n")
	b.WriteString("preAllocSize=4096\n")
	if t := c.tls; t != nil {
		// Keys ZooKeeper does not know become zookeeper.* system
		// properties, which is where its X509Util reads the ssl.* ones.
		fmt.Fprintf(&b, "secureClientPort=%d\nsecureClientPortAddress=127.0.0.1\n", m.securePort)
		b.WriteString("serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n")
		fmt.Fprintf(&b, "ssl.keyStore.location=%s\nssl.keyStore.type=PEM\n", t.keyStore)
		fmt.Fprintf(&b, "ssl.trustStore.location=%s\nssl.trustStore.type=PEM\n", t.trustStore)
		fmt.Fprintf(&b, "ssl.clientAuth=%s\n", t.clientAuth)
	}
	if len(c.members) == 1 {
		b.WriteString("standaloneEnabled=true\n")
		return b.String()
	}
	b.WriteString("standaloneEnabled=false\nreconfigEnabled=false\nquorumListenOnAllIPs=false\n")
	for _, o := range c.members {
		fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", o.idx+1, o.quorumPort, o.electionPort)
	}
	return b.String()
}

// javaArgs is the JVM command line for m.
func (c *Cluster) javaArgs(m *member) []string {
	args := []string{
		"-Xmx256m",
		"-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1", // faster start; throughput does not matter here
		"-XX:-UsePerfData",
		"-Djava.awt.headless=true",
		"-Dzookeeper.log.dir=" + m.dir,
		"-Dzookeeper.root.logger=INFO,CONSOLE",
		"-Dlog4j.configuration=file:" + filepath.Join(c.dir, "log4j.properties"),
		"-Dlogback.configurationFile=" + filepath.Join(c.dir, "logback.xml"),
		// The kernel keeps written data across a process kill; fsync only
		// guards against a machine crash, which a test does not survive
		// anyway.
		"-Dzookeeper.forceSync=no",
	}
	if len(c.members) > 1 {
		args = append(args,
			// Retry binding the election port (after a restart) rather
			// than give up after three tries.
			"-Dzookeeper.electionPortBindRetry=20",
			// Peers are on loopback: a dead one refuses at once, a live
			// one answers at once.
			"-Dzookeeper.cnxTimeout=1000",
			// Keep election rounds short when the first one fails.
			"-Dzookeeper.fastleader.maxNotificationInterval=2000",
		)
	}
	args = append(args, c.opts.JavaOpts...)
	return append(args,
		"-cp", strings.Join(c.inst.classpath, string(os.PathListSeparator)),
		mainClass, m.cfgPath())
}

// launch starts m's JVM without waiting for it to serve.
func (c *Cluster) launch(m *member) (*process, error) {
	logf, err := os.OpenFile(m.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	off, _ := logf.Seek(0, io.SeekEnd)
	fmt.Fprintf(logf, "=== zktest: starting member %d (127.0.0.1:%d) at %s ===\n",
		m.idx, m.clientPort, time.Now().Format(time.RFC3339Nano))

	cmd := exec.Command(c.inst.java, c.javaArgs(m)...)
	cmd.Dir = m.dir
	cmd.WaitDelay = testserver.StopGrace
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		w := io.MultiWriter(logf, &lineLogger{log: c.log, member: m.idx})
		cmd.Stdout, cmd.Stderr = w, w
	} else {
		cmd.Stdout, cmd.Stderr = logf, logf
	}
	sp, err := testserver.Start(cmd, func() { logf.Close() })
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("zktest: starting member %d: %w", m.idx, err)
	}
	p := &process{Process: sp, logOffset: off}
	c.log.Info("zktest: member started", "member", m.idx, "addr", m.addr(), "pid", p.PID)
	return p, nil
}

// stopProcess ends p: with SIGTERM (after a SIGCONT) and up to testserver.StopGrace
// to exit if graceful, then with SIGKILL to its whole process group. It
// returns once p is reaped.
func stopProcess(p *process, graceful bool) error {
	if err := p.Stop(graceful); err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	return nil
}

// startAll launches every member and waits until each serves.
func (c *Cluster) startAll(ctx context.Context) error {
	procs := make([]*process, len(c.members))
	for i, m := range c.members {
		p, err := c.launch(m)
		if err != nil {
			return err
		}
		c.setProc(m, p)
		procs[i] = p
	}
	for i, m := range c.members {
		if err := c.waitMember(ctx, m, procs[i], true); err != nil {
			return err
		}
	}
	return nil
}

// killAll kills every member (used when a start failed).
func (c *Cluster) killAll() {
	for _, m := range c.members {
		if p := c.proc(m); p != nil {
			_ = stopProcess(p, false)
			c.setProc(m, nil)
		}
	}
}

// waitMember waits until m answers srvr with a Mode (or, if needMode is
// false, answers srvr at all: a member without a quorum answers that it is
// not serving). It fails early if the JVM exits.
func (c *Cluster) waitMember(ctx context.Context, m *member, p *process, needMode bool) error {
	var last string
	for {
		mode, answer, err := serverMode(ctx, m.addr())
		if err == nil && (mode != "" || !needMode) {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = answer
		}
		t := time.NewTimer(testserver.PollInterval)
		select {
		case <-p.Done():
			t.Stop()
			return c.exitError(m, p)
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("zktest: member %d (%s) not serving: %w; last srvr: %q\n%s",
				m.idx, m.addr(), ctx.Err(), last, c.logTail(m, p))
		case <-t.C:
		}
	}
}

func (c *Cluster) exitError(m *member, p *process) error {
	tail, section := c.readLog(m, p)
	err := fmt.Errorf("zktest: member %d (%s) exited during startup (%v)\n%s", m.idx, m.addr(), p.Err(), tail)
	if strings.Contains(section, "Address already in use") {
		err = fmt.Errorf("%w [%w]", err, errPortTaken)
	}
	return err
}

func (c *Cluster) logTail(m *member, p *process) string {
	tail, _ := c.readLog(m, p)
	return tail
}

// readLog returns the last lines p wrote to m's log, formatted for an
// error, and the raw text of this run (at most the last MiB).
func (c *Cluster) readLog(m *member, p *process) (tail, section string) {
	f, err := os.Open(m.logPath())
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err), ""
	}
	defer f.Close()
	off := p.logOffset
	if fi, err := f.Stat(); err == nil && fi.Size()-off > 1<<20 {
		off = fi.Size() - 1<<20
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, 1<<20))
	section = string(b)
	lines := strings.Split(strings.TrimRight(section, "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return fmt.Sprintf("--- last %d lines of %s ---\n%s", len(lines), m.logPath(), strings.Join(lines, "\n")), section
}

func (c *Cluster) proc(m *member) *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return m.proc
}

func (c *Cluster) setProc(m *member, p *process) {
	c.mu.Lock()
	m.proc = p
	c.mu.Unlock()
}

// member returns member i, or an error if i is out of range or the cluster
// is closed.
func (c *Cluster) member(i int) (*member, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, errors.New("zktest: cluster is closed")
	}
	if i < 0 || i >= len(c.members) {
		return nil, fmt.Errorf("zktest: member %d out of range [0,%d)", i, len(c.members))
	}
	return c.members[i], nil
}

// running returns the members whose JVM is alive.
func (c *Cluster) running() []*member {
	c.mu.Lock()
	defer c.mu.Unlock()
	var r []*member
	for _, m := range c.members {
		if m.proc != nil && !m.proc.Exited() {
			r = append(r, m)
		}
	}
	return r
}

func (c *Cluster) quorum() int { return len(c.members)/2 + 1 }

// Servers returns each member's client address, "127.0.0.1:port", in member
// order. Addresses stay the same across stops and restarts.
func (c *Cluster) Servers() []string {
	s := make([]string, len(c.members))
	for i, m := range c.members {
		s[i] = m.addr()
	}
	return s
}

// ConnectString returns the client addresses joined by commas, as
// ZooKeeper clients take them.
func (c *Cluster) ConnectString() string { return strings.Join(c.Servers(), ",") }

// SecureServers returns each member's TLS client address,
// "127.0.0.1:port", in member order, or nil when the cluster was started
// without [Options.TLS]. The plain addresses of [Cluster.Servers] keep
// working next to them.
func (c *Cluster) SecureServers() []string {
	if c.tls == nil {
		return nil
	}
	s := make([]string, len(c.members))
	for i, m := range c.members {
		s[i] = m.tlsAddr()
	}
	return s
}

// TLS returns the files a client needs for [Cluster.SecureServers], and
// false when the cluster was started without [Options.TLS].
func (c *Cluster) TLS() (TLSFiles, bool) {
	if c.tls == nil {
		return TLSFiles{}, false
	}
	return c.tls.client, true
}

// Size returns the number of members.
func (c *Cluster) Size() int { return len(c.members) }

// PID returns the process id of member i's JVM, or 0 when it is not running
// (or i is out of range), so that a benchmark can read the server's CPU time.
func (c *Cluster) PID(i int) int {
	if i < 0 || i >= len(c.members) {
		return 0
	}
	p := c.proc(c.members[i])
	if p == nil || p.Exited() {
		return 0
	}
	return p.PID
}

// Stop stops member i gracefully: SIGTERM, then SIGKILL if it has not
// exited within 10s. Stopping a stopped member does nothing.
func (c *Cluster) Stop(i int) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	return c.stopLocked(i, true)
}

// Kill kills member i with SIGKILL, like a crash. Killing a stopped member
// does nothing.
func (c *Cluster) Kill(i int) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	return c.stopLocked(i, false)
}

func (c *Cluster) stopLocked(i int, graceful bool) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	p := c.proc(m)
	if p == nil {
		return nil
	}
	if err := stopProcess(p, graceful); err != nil {
		return err
	}
	c.setProc(m, nil)
	how := "stopped"
	if !graceful {
		how = "killed"
	}
	c.log.Info("zktest: member "+how, "member", i, "addr", m.addr(), "pid", p.PID)
	return nil
}

// StartMember starts stopped member i again, with its data and ports, and
// waits until it serves or ctx ends (two minutes if ctx has no deadline).
// In an ensemble a member serves only with a quorum; if too few members
// run for that, StartMember returns once the member answers at all. To
// bring back a whole ensemble use RestartAll.
func (c *Cluster) StartMember(ctx context.Context, i int) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	return c.startLocked(ctx, i)
}

func (c *Cluster) startLocked(ctx context.Context, i int) error {
	m, err := c.member(i)
	if err != nil {
		return err
	}
	if p := c.proc(m); p != nil && !p.Exited() {
		return fmt.Errorf("zktest: member %d is already running", i)
	}
	ctx, cancel := testserver.WithDefaultTimeout(ctx)
	defer cancel()
	p, err := c.launch(m)
	if err != nil {
		return err
	}
	c.setProc(m, p)
	needMode := len(c.running()) >= c.quorum()
	if err := c.waitMember(ctx, m, p, needMode); err != nil {
		_ = stopProcess(p, false)
		c.setProc(m, nil)
		return err
	}
	return nil
}

// Restart stops member i gracefully and starts it again; see StartMember.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if err := c.stopLocked(i, true); err != nil {
		return err
	}
	return c.startLocked(ctx, i)
}

// RestartAll stops every member gracefully, then starts them all and waits
// until each serves or ctx ends (two minutes if ctx has no deadline).
func (c *Cluster) RestartAll(ctx context.Context) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	ctx, cancel := testserver.WithDefaultTimeout(ctx)
	defer cancel()
	for i := range c.members {
		if err := c.stopLocked(i, true); err != nil {
			return err
		}
	}
	return c.startAll(ctx)
}

// Leader waits until a running member says in its srvr answer that it is
// the leader (or a standalone server) and returns its index. It gives up
// when ctx ends (two minutes if ctx has no deadline).
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	ctx, cancel := testserver.WithDefaultTimeout(ctx)
	defer cancel()
	for {
		run := c.running()
		if len(run) == 0 {
			return -1, errors.New("zktest: no member is running")
		}
		for _, m := range run {
			if mode, _, err := serverMode(ctx, m.addr()); err == nil && (mode == "leader" || mode == "standalone") {
				return m.idx, nil
			}
		}
		if err := testserver.Sleep(ctx, testserver.PollInterval); err != nil {
			return -1, fmt.Errorf("zktest: no leader among %d running members: %w", len(run), err)
		}
	}
}

// WaitServing waits until every running member serves (answers srvr with
// a Mode), which in an ensemble means a quorum is up and has a leader. It
// fails at once if fewer than a quorum of members run, and otherwise when
// ctx ends (two minutes if ctx has no deadline).
func (c *Cluster) WaitServing(ctx context.Context) error {
	ctx, cancel := testserver.WithDefaultTimeout(ctx)
	defer cancel()
	for {
		run := c.running()
		if len(run) < c.quorum() {
			return fmt.Errorf("zktest: only %d of %d members run; serving needs %d", len(run), len(c.members), c.quorum())
		}
		var waiting []string
		for _, m := range run {
			mode, answer, err := serverMode(ctx, m.addr())
			switch {
			case err != nil:
				waiting = append(waiting, fmt.Sprintf("member %d: %v", m.idx, err))
			case mode == "":
				waiting = append(waiting, fmt.Sprintf("member %d: %q", m.idx, answer))
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		if err := testserver.Sleep(ctx, testserver.PollInterval); err != nil {
			return fmt.Errorf("zktest: not serving: %w; %s", err, strings.Join(waiting, "; "))
		}
	}
}

// Close stops every member and, if StartCluster created the directory,
// removes it. It is safe to call more than once; later calls return the
// first call's result. The cluster cannot be used afterwards.
func (c *Cluster) Close() error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	c.mu.Lock()
	if c.closed {
		defer c.mu.Unlock()
		return c.closeErr
	}
	c.closed = true
	c.mu.Unlock()

	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		p := c.proc(m)
		if p == nil {
			continue
		}
		wg.Go(func() {
			errs[i] = stopProcess(p, true)
			if errs[i] == nil {
				c.setProc(m, nil)
			}
		})
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil {
		err = c.removeDir()
	}
	c.log.Info("zktest: cluster closed", "dir", c.dir, "err", err)
	c.mu.Lock()
	c.closeErr = err
	c.mu.Unlock()
	return err
}

// removeDir removes the directory if StartCluster created it.
func (c *Cluster) removeDir() error {
	if !c.ownDir {
		return nil
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	return nil
}

// lineLogger turns a member's output into one debug record per line.
// exec.Cmd calls Write from one goroutine at a time when Stdout and Stderr
// are the same writer.
type lineLogger struct {
	log    *slog.Logger
	member int
	buf    []byte
}

func (w *lineLogger) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 {
		w.emit(w.buf)
		w.buf = nil
	}
	if len(w.buf) == 0 {
		w.buf = nil // let the consumed backing array go
	}
	return len(p), nil
}

func (w *lineLogger) emit(line []byte) {
	w.log.Debug("zookeeper", "member", w.member, "line", strings.TrimRight(string(line), "\r"))
}

const log4jProperties = `# Written by zktest: the server logs to stdout, which goes to server.log.
log4j.rootLogger=${zookeeper.root.logger}
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%c{1}] - %m%n
`

const logbackXML = `<!-- Written by zktest: the server logs to stdout, which goes to server.log. -->
<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread:%logger{0}] - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="CONSOLE"/></root>
</configuration>
`
