package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardjob/shardjob/tools/benchkit"
	"github.com/shardjob/shardjob/tools/proc"
)

// redisServer is a redis-server the benchmark started on loopback, with
// nothing kept on disk.
type redisServer struct {
	proc    *proc.Proc
	addr    string
	version string
	client  *redis.Client
}

// redisBinary finds redis-server as scripts/redis.sh does: $REDIS_SERVER,
// then PATH.
func redisBinary() (string, error) {
	if p := os.Getenv("REDIS_SERVER"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New("redis-server not found: run bash scripts/redis.sh ensure, or set REDIS_SERVER")
	}
	return p, nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startRedis starts redis-server with its log in dir and waits, until ctx
// ends, for it to answer PING.
func startRedis(ctx context.Context, dir string) (*redisServer, error) {
	bin, err := redisBinary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--protected-mode", "yes")
	cmd.Stdout, cmd.Stderr = logf, logf
	p, err := proc.Start("redis-server", cmd, nil)
	if err != nil {
		return nil, err
	}
	s := &redisServer{proc: p, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	s.client = redis.NewClient(&redis.Options{Addr: s.addr})
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err = s.client.Ping(pctx).Err()
		cancel()
		if err == nil {
			break
		}
		if !p.Alive() {
			err = fmt.Errorf("redis-server exited: %v (log %s)", p.Err(), logf.Name())
		} else if ctx.Err() != nil {
			err = fmt.Errorf("redis-server not answering: %w", err)
		} else if e := benchkit.SleepCtx(ctx, 50*time.Millisecond); e == nil {
			continue
		}
		return nil, errors.Join(err, s.close())
	}
	vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := s.client.Info(vctx, "server").Result()
	if err != nil {
		return nil, errors.Join(err, s.close())
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			s.version = v
		}
	}
	return s, nil
}

// flush empties the server between runs.
func (s *redisServer) flush(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return s.client.FlushAll(ctx).Err()
}

// close stops the server (SIGTERM, then SIGKILL after 10 s).
func (s *redisServer) close() error {
	return errors.Join(s.client.Close(), s.proc.Stop(10*time.Second))
}
