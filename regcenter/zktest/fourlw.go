package zktest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// exchangeTimeout bounds one four-letter-word exchange. A local server
// answers in milliseconds, but one that is still starting may accept a
// connection and never answer it; a short timeout lets the next poll try
// again instead.
const exchangeTimeout = 500 * time.Millisecond

// FourLetter sends a four-letter word ("srvr", "mntr", "wchs", ...) to
// the ZooKeeper server at addr and returns its answer (at most 1 MiB),
// within ctx. The servers zktest starts allow every word.
func FourLetter(ctx context.Context, addr, word string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(conn, 1<<20))
	if err != nil {
		return "", fmt.Errorf("%s: %w", word, err)
	}
	return string(b), nil
}

// parseMode returns the Mode line's value from a srvr answer ("standalone",
// "leader", "follower", "observer"), or "" if the server is not serving.
func parseMode(srvr string) string {
	sc := bufio.NewScanner(strings.NewReader(srvr))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Mode:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// serverMode asks addr for its mode. It returns "" and the reason when the
// server does not answer or does not serve.
func serverMode(ctx context.Context, addr string) (mode, answer string, err error) {
	ctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	defer cancel()
	answer, err = FourLetter(ctx, addr, "srvr")
	if err != nil {
		return "", "", err
	}
	return parseMode(answer), strings.TrimSpace(answer), nil
}
