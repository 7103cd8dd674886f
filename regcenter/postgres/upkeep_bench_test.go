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
	var hbTicks, pollTicks, refTicks int64
	b.ResetTimer()
	for b.Loop() {
		tr := serverTicks()
		if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
			b.Fatal(err)
		}
		t0 := serverTicks()
		refTicks += t0 - tr
		if !c.HeartbeatNow() {
			b.Fatal("a heartbeat went unanswered")
		}
		t1 := serverTicks()
		if err := c.PollNow(); err != nil {
			b.Fatal(err)
		}
		t2 := serverTicks()
		hbTicks += t1 - t0
		pollTicks += t2 - t1
	}
	b.ReportMetric(float64(hbTicks*tick)/float64(b.N), "server-µs/heartbeat")
	b.ReportMetric(float64(pollTicks*tick)/float64(b.N), "server-µs/poll")
	b.ReportMetric(float64(refTicks*tick)/float64(b.N), "server-µs/select-1")
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
