package zktest

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// tlsDialer dials with cfg; the handshake is bounded by the dial timeout.
func tlsDialer(cfg *tls.Config) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
		return d.Dial(network, address)
	}
}

// TestTLSServesSecurePort starts a standalone server with a TLS port that
// needs a client certificate: a client with the cluster's CA and client
// certificate gets a session there and sees what a plain client wrote; a
// client that presents no certificate is refused.
func TestTLSServesSecurePort(t *testing.T) {
	c := Start(t, WithMutualTLS())
	files, ok := c.TLS()
	if !ok || len(c.SecureServers()) != 1 {
		t.Fatalf("TLS() = %v, %v; SecureServers() = %v", files, ok, c.SecureServers())
	}
	plain := connect(t, c.Servers())
	if _, err := plain.Create("/tls-check", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	cfg, err := files.Config()
	if err != nil {
		t.Fatal(err)
	}
	conn, events, err := zk.Connect(c.SecureServers(), 2*time.Second, zk.WithLogger(quietLogger{}), zk.WithDialer(tlsDialer(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitForSession(t, events)
	data, _, err := conn.Get("/tls-check")
	if err != nil || string(data) != "hello" {
		t.Fatalf("get over TLS: %q, %v", data, err)
	}

	// No client certificate: the server ends the connection before any
	// ZooKeeper traffic is answered.
	noCert := cfg.Clone()
	noCert.Certificates = nil
	raw, err := tls.Dial("tcp", c.SecureServers()[0], noCert)
	if err == nil {
		defer raw.Close()
		_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = io.ReadFull(raw, make([]byte, 1))
	}
	if err == nil {
		t.Fatal("a client without a certificate was served")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("a client without a certificate was neither served nor refused: %v", err)
	}
	t.Logf("without a client certificate: %v", err)
}

// waitForSession waits for a session event, then keeps draining events so
// the client never blocks on them.
func waitForSession(t *testing.T, events <-chan zk.Event) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				go func() {
					for range events {
					}
				}()
				return
			}
		case <-timeout:
			t.Fatal("no session over TLS within 30s")
		}
	}
}
