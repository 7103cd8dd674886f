// Package pgtest starts a throwaway PostgreSQL server for tests: Debian's
// postgresql package (or the binaries in $PG_BIN), a fresh cluster in a
// temporary directory, on a free loopback port, with its unix socket in
// that directory too. Nothing outside the directory is touched, and Close
// removes it.
//
// PostgreSQL refuses to run as root; when the tests run as root the
// server runs as the unprivileged user "nobody" (or $PG_USER), and the
// directory is handed to that user.
//
// StartStandby adds a streaming-replication standby of a server (a second
// postmaster on another port, synchronous or not) and Promote makes it a
// primary, for failover tests.
//
// scripts/postgresql.sh ensure installs the package where it is missing.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is one running PostgreSQL server.
type Server struct {
	// DSN connects to its "postgres" database as the superuser "postgres".
	DSN  string
	Port int
	Dir  string // the temporary directory: data/, sock/, server.log

	bin      string
	cred     *syscall.Credential
	mu       sync.Mutex
	cmd      *exec.Cmd // nil while stopped
	exited   chan struct{}
	waitErr  error
	n        int // databases made by NewDatabase
	closed   bool
	durable  bool // synchronous_commit on: see StartCrashSafe
	standbys int  // standbys made by StartStandby
}

// ErrNotInstalled is BinDir's (and Start's) error when no PostgreSQL
// server binaries are found.
var ErrNotInstalled = errors.New("pgtest: PostgreSQL is not installed")

// BinDir finds PostgreSQL's server binaries: $PG_BIN, else the newest
// /usr/lib/postgresql/*/bin (Debian's layout).
func BinDir() (string, error) {
	if d := os.Getenv("PG_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err != nil {
			return "", fmt.Errorf("pgtest: PG_BIN=%s has no postgres binary: %w", d, err)
		}
		return d, nil
	}
	dirs, err := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if err != nil {
		return "", err
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("%w: no /usr/lib/postgresql/*/bin/postgres; run: bash scripts/postgresql.sh ensure (or set PG_BIN)", ErrNotInstalled)
	}
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) < version(dirs[j]) })
	return filepath.Dir(dirs[len(dirs)-1]), nil
}

func version(p string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p)))) // a non-numeric dir sorts first
	return v
}

// credential is who the server runs as: nil for the current user, or an
// unprivileged user when running as root.
func credential() (*syscall.Credential, int, int, error) {
	if os.Geteuid() != 0 {
		return nil, -1, -1, nil
	}
	name := os.Getenv("PG_USER")
	if name == "" {
		name = "nobody"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("pgtest: running as root, PostgreSQL needs an unprivileged user: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return nil, 0, 0, fmt.Errorf("pgtest: user %s: %w", name, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid, gid, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start initializes a cluster and starts its server; it returns once the
// server accepts connections, or fails when ctx ends. For speed it
// acknowledges a commit before its WAL is written (synchronous_commit
// off): Kill loses the latest commits. StartCrashSafe does not.
func Start(ctx context.Context) (*Server, error) { return start(ctx, false) }

// StartCrashSafe is Start with every acknowledged commit written to the
// operating system before it is acknowledged (synchronous_commit on;
// fsync stays off, which only a crash of the machine would notice): a
// server killed by Kill comes back with every commit a client saw, as a
// real server does after a crash.
func StartCrashSafe(ctx context.Context) (*Server, error) { return start(ctx, true) }

func start(ctx context.Context, durable bool) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, uid, gid, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := makeDir(cred, uid, gid)
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, exited: make(chan struct{}), durable: durable}
	fail := func(err error) (*Server, error) {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("pgtest: initdb: %w\n%s", err, out))
	}
	if s.Port, err = freePort(); err != nil {
		return fail(err)
	}
	s.bin, s.cred = bin, cred
	s.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
	if err := s.launch(ctx); err != nil {
		if s.cmd == nil {
			return fail(err)
		}
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// makeDir makes a server's temporary directory with its data/ and sock/,
// handed to the server's user when it is not the current one.
func makeDir(cred *syscall.Credential, uid, gid int) (string, error) {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return "", err
	}
	for _, sub := range []string{"data", "sock"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			return "", errors.Join(err, os.RemoveAll(dir))
		}
	}
	if cred != nil {
		for _, p := range []string{dir, filepath.Join(dir, "data"), filepath.Join(dir, "sock")} {
			if err := os.Chown(p, uid, gid); err != nil {
				return "", errors.Join(fmt.Errorf("pgtest: hand %s to uid %d: %w", p, uid, err), os.RemoveAll(dir))
			}
		}
	}
	return dir, nil
}

// launch starts the server on s.Dir's data and s.Port, and returns once
// it accepts connections. On an error after the process started, s.cmd is
// set and the caller stops it.
func (s *Server) launch(ctx context.Context) error {
	dir := s.Dir
	logf, err := os.OpenFile(filepath.Join(dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	syncCommit := "off"
	if s.durable {
		syncCommit = "on"
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", filepath.Join(dir, "data"),
		"-p", strconv.Itoa(s.Port), "-k", filepath.Join(dir, "sock"),
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit="+syncCommit,
		"-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=64MB",
		// PostgreSQL's defaults, stated: StartStandby needs them.
		"-c", "wal_level=replica", "-c", "max_wal_senders=10", "-c", "hot_standby=on")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	go func() { s.waitErr = cmd.Wait(); close(exited) }()
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, s.DSN)
		cancel()
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			return fmt.Errorf("pgtest: postgres exited during startup (%v):\n%s", s.waitErr, tail(string(log), 30))
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres did not accept connections on port %d: %w (last: %v)", s.Port, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops the server with a fast shutdown (open connections are cut)
// and keeps its data directory: Restart starts it again on the same port
// with the same data.
func (s *Server) Stop() error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return errors.New("pgtest: the server is not running")
	}
	return stopProcess(cmd, exited, syscall.SIGINT)
}

// Kill kills the server and every backend of it with SIGKILL, as a
// crash would, and keeps its data directory: Restart starts it again,
// with crash recovery, on the same port and data.
func (s *Server) Kill() error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return errors.New("pgtest: the server is not running")
	}
	// Each backend runs in a session of its own (it calls setsid), out of
	// the postmaster's process group: the postmaster is frozen so that it
	// forks no more, its children are found in /proc and killed with it.
	pid := cmd.Process.Pid
	errs := []error{syscall.Kill(pid, syscall.SIGSTOP)}
	kids := children(pid)
	for _, k := range kids {
		if err := syscall.Kill(k, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, syscall.Kill(-pid, syscall.SIGKILL))
	<-exited
	// A killed backend leaves the shared memory the restart needs only
	// once it is dead: wait for that (a zombie holds none).
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range kids {
		for alive(k) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

// PIDs returns the server's processes: the postmaster and its children
// (a backend per connection, and the server's own workers), none while it
// is stopped. Their CPU together is the server's.
func (s *Server) PIDs() []int {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	return append([]int{cmd.Process.Pid}, children(cmd.Process.Pid)...)
}

// children lists the processes whose parent is pid (Linux: /proc).
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		k, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := procStat(k); ppid == pid {
			out = append(out, k)
		}
	}
	return out
}

// procStat returns pid's parent and state from /proc/PID/stat (0, "" when
// it is gone).
func procStat(pid int) (ppid int, state string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ""
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 2 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0]
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	_, st := procStat(pid)
	return st != "" && st != "Z" && st != "X"
}

// Pause freezes the server and every backend of it (SIGSTOP): its
// connections stay open and answer nothing, as a host cut off by the
// network. Resume continues it.
func (s *Server) Pause() error { return s.signalGroup(syscall.SIGSTOP) }

// Resume continues a server frozen by Pause.
func (s *Server) Resume() error { return s.signalGroup(syscall.SIGCONT) }

func (s *Server) signalGroup(sig syscall.Signal) error {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return errors.New("pgtest: the server is not running")
	}
	// The backends are in sessions of their own (see Kill).
	errs := []error{syscall.Kill(-cmd.Process.Pid, sig)}
	for _, k := range children(cmd.Process.Pid) {
		if err := syscall.Kill(k, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Restart starts a server stopped by Stop (or Kill) again, on the same
// port and data directory, and returns once it accepts connections.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	running, closed := s.cmd != nil, s.closed
	s.mu.Unlock()
	if running || closed {
		return errors.New("pgtest: Restart needs a server stopped by Stop")
	}
	err := s.launch(ctx)
	if err != nil {
		s.mu.Lock()
		cmd, exited := s.cmd, s.exited
		s.cmd = nil
		s.mu.Unlock()
		if cmd != nil {
			err = errors.Join(err, stopProcess(cmd, exited, syscall.SIGINT))
		}
	}
	return err
}

// stopProcess signals the server and waits for it to exit, killing its
// process group after 10 s.
func stopProcess(cmd *exec.Cmd, exited chan struct{}, sig syscall.Signal) error {
	var errs []error
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		errs = append(errs, err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
			errs = append(errs, err)
		}
		<-exited
	}
	return errors.Join(errs...)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// NewDatabase creates a fresh, empty database and returns its DSN, so
// tests sharing a server do not see each other's tables.
func (s *Server) NewDatabase(ctx context.Context) (string, error) {
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("test_%d", s.n)
	s.mu.Unlock()
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		return "", fmt.Errorf("pgtest: connect: %w", err)
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	if cerr := conn.Close(ctx); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return strings.Replace(s.DSN, "/postgres?", "/"+name+"?", 1), nil
}

// Close stops the server (a fast shutdown, then SIGKILL after 10 s) if it
// runs, and removes its directory.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	var errs []error
	if cmd != nil {
		errs = append(errs, stopProcess(cmd, exited, syscall.SIGINT))
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// RunTests is for a package's TestMain (m is its *testing.M, or what
// wraps it): it starts a server, stores it in *s, runs the tests and stops
// the server, returning the exit code. If no server can be started it
// says why and returns 1.
//
//	var pg *pgtest.Server
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.RunTests(m, &pg)) }
func RunTests(m interface{ Run() int }, s **Server) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	srv, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*s = srv
	code := m.Run()
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: close:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
