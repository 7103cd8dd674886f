package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Replication says whether a primary waits for its standby at each commit.
type Replication int

const (
	// Asynchronous: the primary acknowledges a commit without waiting
	// for the standby. A commit the standby had not received when the
	// primary died is lost when the standby is promoted.
	Asynchronous Replication = iota
	// Synchronous: the primary names the standby in
	// synchronous_standby_names and acknowledges a commit only once the
	// standby has written it: promoting the standby loses no
	// acknowledged commit. While the standby is down (or once it is
	// promoted) the primary's commits wait for it. It needs a primary
	// whose commits wait at all: one started by StartCrashSafe.
	Synchronous
)

func (r Replication) String() string {
	if r == Synchronous {
		return "synchronous"
	}
	return "asynchronous"
}

// StartStandby starts a streaming-replication standby of the running
// server s: a copy of s's data taken by pg_basebackup -R (with a
// replication slot on s, so that s keeps the WAL the standby has not yet
// received), in a directory of its own, served by a second postmaster on
// another loopback port. It returns once the standby accepts read-only
// connections and streams from s, and, for Synchronous, once s counts it
// as its synchronous standby; every wait ends with ctx.
//
// The standby is a Server like any: Stop, Kill, Pause, Restart and Close
// it, and Promote it to make it a primary. Close it before s, or after:
// each removes only its own directory.
func (s *Server) StartStandby(ctx context.Context, r Replication) (*Server, error) {
	s.mu.Lock()
	running, durable := s.cmd != nil, s.durable
	s.standbys++
	name := fmt.Sprintf("pgtest_standby_%d", s.standbys)
	s.mu.Unlock()
	if !running {
		return nil, errors.New("pgtest: StartStandby needs a running primary")
	}
	if r == Synchronous && !durable {
		return nil, errors.New("pgtest: a synchronous standby needs a primary whose commits wait (StartCrashSafe): " +
			"with synchronous_commit off the primary acknowledges a commit before the standby has it")
	}
	cred, uid, gid, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := makeDir(cred, uid, gid)
	if err != nil {
		return nil, err
	}
	sb := &Server{Dir: dir, exited: make(chan struct{}), durable: durable, bin: s.bin, cred: cred}
	backup := exec.CommandContext(ctx, filepath.Join(s.bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port),
		"-U", "postgres", "-D", filepath.Join(dir, "data"), "-R", "-X", "stream", "-C", "-S", name, "-c", "fast", "--no-sync",
		// Written into the standby's primary_conninfo: the name the
		// primary knows it by (pg_stat_replication,
		// synchronous_standby_names).
		"-d", "application_name="+name)
	backup.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	backup.Dir = dir
	if out, err := backup.CombinedOutput(); err != nil {
		return nil, errors.Join(fmt.Errorf("pgtest: pg_basebackup of the server on port %d: %w\n%s", s.Port, err, out), os.RemoveAll(dir))
	}
	if sb.Port, err = freePort(); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	sb.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", sb.Port)
	if err := sb.launch(ctx); err != nil {
		if sb.cmd == nil {
			return nil, errors.Join(err, os.RemoveAll(dir))
		}
		return nil, errors.Join(err, sb.Close())
	}
	fail := func(err error) (*Server, error) { return nil, errors.Join(err, sb.Close()) }
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		return fail(fmt.Errorf("pgtest: connect to the primary: %w", err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	want := "async"
	if r == Synchronous {
		want = "sync"
		// name is ours: letters, digits and underscores, no quoting needed.
		for _, q := range []string{"ALTER SYSTEM SET synchronous_standby_names = '" + name + "'", "SELECT pg_reload_conf()"} {
			if _, err := conn.Exec(ctx, q); err != nil {
				return fail(fmt.Errorf("pgtest: make the standby synchronous: %s: %w", q, err))
			}
		}
	}
	// Wait until the primary streams to the standby in the wanted mode.
	var state, mode string
	for {
		err := conn.QueryRow(ctx, "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1", name).Scan(&state, &mode)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fail(fmt.Errorf("pgtest: read the primary's pg_stat_replication: %w", err))
		}
		if state == "streaming" && mode == want {
			return sb, nil
		}
		select {
		case <-ctx.Done():
			return fail(fmt.Errorf("pgtest: the standby on port %d does not stream from the primary as %s (state %q, %q): %w",
				sb.Port, r, state, mode, ctx.Err()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Promote makes a standby started by StartStandby a primary (pg_promote:
// it replays what it received, leaves recovery on a new timeline and
// accepts writes), and returns once it does, or fails when ctx ends.
func (s *Server) Promote(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		return fmt.Errorf("pgtest: promote: connect to the standby: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// pg_promote waits up to wait_seconds (whole seconds); ctx bounds the
	// call besides.
	secs := 60
	if d, ok := ctx.Deadline(); ok {
		secs = max(int(time.Until(d)/time.Second), 1)
	}
	var done bool
	if err := conn.QueryRow(ctx, "SELECT pg_promote(true, $1)", secs).Scan(&done); err != nil {
		return fmt.Errorf("pgtest: promote the server on port %d: %w", s.Port, err)
	}
	if !done {
		return fmt.Errorf("pgtest: the server on port %d was not promoted within %d s", s.Port, secs)
	}
	return nil
}
