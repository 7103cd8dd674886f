package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/regcenter"
)

// BenchmarkUpkeepOf1000Instances is what one instance's upkeep costs the
// server when 1,000 instances share a namespace: each instance sends, per
// fifth of its session timeout, one heartbeat (its renewal, the reaping
// of lapsed sessions and the pruning of the change log, in one round
// trip) and, every two seconds, one poll of the change log. The other 999
// sessions are rows with live leases; one center sends the upkeep, one
// round after another. It reports the server's CPU per heartbeat and per
// poll (all of PostgreSQL's processes, in clock ticks of /proc), from which
// 1,000 instances' load follows: with a 10 s session, 1,000 × (1/2 s
// heartbeats + 1/2 s polls). A SELECT 1 on the same server, measured the
// same way, is the floor of one round trip.
func BenchmarkUpkeepOf1000Instances(b *testing.B) {
	url := newDatabase(b, pg)
	c := newCenter(b, url, regcenter.Config{Namespace: "upkeep", SessionTimeout: 10 * time.Second})
	ctx := ctxFor(b)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `INSERT INTO shardjob_rc_sessions (token, ns, ttl, expires)
		SELECT g, 'upkeep', interval '10 seconds', now() + interval '1 hour' FROM generate_series(1, 999) g`); err != nil {
		b.Fatal(err)
	}
	serverTicks := func() int64 {
		var sum int64
		for _, pid := range pg.PIDs() {
			if t, err := cpuTicks(pid); err == nil {
				sum += t
			}
		}
		return sum
	}
	const tick = 10_000 // µs of CPU per clock tick (USER_HZ 100)
	// Each kind runs b.N times in a row; the server's CPU over that
	// stretch, less what it spends idle over as long (its background
	// processes), is the kind's.
	phase := func(f func()) (ticks int64, wall time.Duration) {
		t0, w0 := serverTicks(), time.Now()
		for range b.N {
			f()
		}
		return serverTicks() - t0, time.Since(w0)
	}
	b.ResetTimer()
	hb, hbWall := phase(func() {
		if !c.HeartbeatNow() {
			b.Fatal("a heartbeat went unanswered")
		}
	})
	poll, pollWall := phase(func() {
		if err := c.PollNow(); err != nil {
			b.Fatal(err)
		}
	})
	ref, refWall := phase(func() {
		if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
			b.Fatal(err)
		}
	})
	b.StopTimer()
	idleWall := max(hbWall, pollWall, refWall)
	i0 := serverTicks()
	time.Sleep(idleWall)
	idlePerSec := float64(serverTicks()-i0) / idleWall.Seconds()
	per := func(ticks int64, wall time.Duration) float64 {
		return max(0, float64(ticks)-idlePerSec*wall.Seconds()) * tick / float64(b.N)
	}
	b.ReportMetric(per(hb, hbWall), "server-µs/heartbeat")
	b.ReportMetric(per(poll, pollWall), "server-µs/poll")
	b.ReportMetric(per(ref, refWall), "server-µs/select-1")
}

// cpuTicks returns the user and system CPU of process pid so far, in clock
// ticks (/proc/PID/stat's utime and stime).
func cpuTicks(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing one (state is field 3, utime 14, stime 15).
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, err
	}
	st, err := strconv.ParseInt(f[12], 10, 64)
	return u + st, err
}
