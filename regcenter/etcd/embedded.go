package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// resolveEmbedded returns c pointed at the member in c.EmbeddedDir: Etcd
// is the address in its endpoint file and Digest the credentials in its
// credentials file. Either file missing or unreadable is an
// [regcenter.ErrInvalidConfig] that names it and never quotes the credentials.
func resolveEmbedded(c regcenter.Config) (regcenter.Config, error) {
	dir := c.EmbeddedDir
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: embeddedDir %s: %s", regcenter.ErrInvalidConfig, dir, fmt.Sprintf(format, a...))
	}
	if fi, err := os.Stat(dir); err != nil {
		return c, bad("%v", err)
	} else if !fi.IsDir() {
		return c, bad("not a directory")
	}
	ep, err := readEmbeddedEndpoint(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return c, bad("%s is missing: is the member running? (it writes the file when it starts serving)", regcenter.EmbeddedEndpointFile)
		}
		return c, bad("%v", err)
	}
	credFile := filepath.Join(dir, regcenter.EmbeddedCredentialsFile)
	if _, err := os.Stat(credFile); errors.Is(err, os.ErrNotExist) {
		return c, bad("%s is missing: the member writes it when it first starts", regcenter.EmbeddedCredentialsFile)
	}
	digest, err := regcenter.Config{DigestFile: credFile}.ResolveDigest()
	if err != nil {
		// It names the file, never what it holds.
		return c, fmt.Errorf("%w (embeddedDir %s: only the member's owner may read its credentials)", err, dir)
	}
	c.Etcd, c.Digest, c.DigestFile, c.EmbeddedDir = []string{ep}, digest, "", ""
	return c, nil
}

// readEmbeddedEndpoint returns the address in dir's endpoint file.
func readEmbeddedEndpoint(dir string) (string, error) {
	epFile := filepath.Join(dir, regcenter.EmbeddedEndpointFile)
	f, err := os.Open(epFile)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, 256))
	f.Close()
	if err != nil {
		return "", err
	}
	ep := strings.TrimSpace(string(b))
	if host, port, err := net.SplitHostPort(ep); err != nil || host == "" || port == "" {
		return "", fmt.Errorf("%s does not hold host:port", epFile)
	}
	return ep, nil
}

// followEmbedded returns the dial options of a client of the embedded
// member in dir: every connection goes to the address its endpoint file
// holds at the time, so that when another process of the host takes the
// member over (on the same data, at another port) the client reconnects
// to it; and reconnections are tried often, as a take-over takes a few
// seconds, not minutes.
func followEmbedded(dir string) []grpc.DialOption {
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		if ep, err := readEmbeddedEndpoint(dir); err == nil {
			addr = ep
		} else if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("embedded member in %s: %s is missing: no process serves it now", dir, regcenter.EmbeddedEndpointFile)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	return []grpc.DialOption{
		grpc.WithContextDialer(dial),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 500 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}),
	}
}
