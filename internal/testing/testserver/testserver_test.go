//go:build unix

package testserver

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Stop ends a server, a paused one too, and reaps it; its process group
// is gone.
func TestStopEndsTheGroup(t *testing.T) {
	for _, graceful := range []bool{true, false} {
		p, err := Start(exec.Command("sleep", "60"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Signal(Stop); err != nil {
			t.Fatal(err)
		}
		if err := p.Stop(graceful); err != nil {
			t.Fatalf("graceful=%v: %v", graceful, err)
		}
		if !p.Exited() || p.Err() == nil {
			t.Errorf("graceful=%v: exited %v, err %v; want exited by a signal", graceful, p.Exited(), p.Err())
		}
		if err := syscall.Kill(-p.PID, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("graceful=%v: process group %d still exists (kill 0: %v)", graceful, p.PID, err)
		}
		if err := p.Signal(Term); err != nil {
			t.Errorf("a signal to a group that is gone: %v, want nil", err)
		}
	}
}

// exited runs once the process has exited, before Done is closed.
func TestExitedRunsBeforeDone(t *testing.T) {
	ran := make(chan struct{})
	p, err := Start(exec.Command("true"), func() { close(ran) })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(StopGrace):
		t.Fatal("true did not exit")
	}
	select {
	case <-ran:
	default:
		t.Fatal("Done closed before exited ran")
	}
	if p.Err() != nil {
		t.Errorf("Err = %v, want nil", p.Err())
	}
}

// The client files reach a server that presents the server certificate
// and requires a client certificate, by name and by address.
func TestCertsMutualTLS(t *testing.T) {
	c, err := WriteCerts(t.TempDir(), "testserver", false)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, err := tls.LoadX509KeyPair(c.ServerCertFile, c.ServerKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	client, err := c.Client.Config()
	if err != nil {
		t.Fatal(err)
	}
	srvCfg := &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientCAs: client.RootCAs, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srvCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // ends when the listener closes
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_, _ = io.WriteString(conn, "ok")
			}()
		}
	}()
	for _, name := range []string{c.Client.ServerName, "127.0.0.1"} {
		cfg := client.Clone()
		cfg.ServerName = name
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), cfg)
		if err != nil {
			t.Fatalf("server name %s: %v", name, err)
		}
		b, err := io.ReadAll(conn)
		conn.Close()
		if err != nil || string(b) != "ok" {
			t.Errorf("server name %s: read %q, %v", name, b, err)
		}
	}
}
