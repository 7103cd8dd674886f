package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/shardjob/shardjob/regcenter"
	"google.golang.org/grpc/credentials"
)

// serverNameCreds hands the handshake the configured server name instead
// of the endpoint's authority. grpc's TLS credentials verify the name of
// the address they dial, whatever the tls.Config's ServerName says, so a
// TLSServerName would otherwise be ignored (and any name accepted).
type serverNameCreds struct {
	credentials.TransportCredentials
	name string
}

func (c serverNameCreds) ClientHandshake(ctx context.Context, _ string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return c.TransportCredentials.ClientHandshake(ctx, c.name, raw)
}

func (c serverNameCreds) Clone() credentials.TransportCredentials {
	return serverNameCreds{TransportCredentials: c.TransportCredentials.Clone(), name: c.name}
}

// etcdCredentials returns grpc transport credentials for cfg that verify
// cfg.ServerName when it is set, and each endpoint's host when it is not.
func etcdCredentials(cfg *tls.Config) credentials.TransportCredentials {
	creds := credentials.NewTLS(cfg)
	if cfg.ServerName == "" {
		return creds
	}
	return serverNameCreds{TransportCredentials: creds, name: cfg.ServerName}
}

// http2Preface is a client's HTTP/2 connection preface followed by an
// empty SETTINGS frame: what a gRPC client sends first. An etcd member
// answers it with a frame of its own.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"

// probeEtcd connects to the endpoints in order, as the etcd client would
// (TLS with cfg, or plain when cfg is nil), until one answers, to learn
// why the client cannot get an answer: grpc retries a failed handshake
// until the request's deadline and reports only the deadline. It returns
// an error wrapping [regcenter.ErrTLS] that names the handshake's failure, or nil
// when an endpoint answered as expected or nothing could be learned before
// ctx ended. sure reports a failure no retry can mend (a certificate not
// trusted, a name that does not match, a client certificate refused, a
// server that speaks the other protocol), as opposed to a connection
// closed without a reason.
func probeEtcd(ctx context.Context, endpoints []string, cfg *tls.Config) (err error, sure bool) {
	var hint error
	for _, ep := range endpoints {
		if ctx.Err() != nil {
			break
		}
		err, sure, answered := probeEndpoint(ctx, ep, cfg)
		if sure || answered {
			return err, sure
		}
		if err != nil && hint == nil {
			hint = err
		}
	}
	return hint, false
}

// probeEndpoint is probeEtcd for one endpoint; answered reports that the
// endpoint answered, so the others need no probe.
func probeEndpoint(ctx context.Context, ep string, cfg *tls.Config) (err error, sure, answered bool) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", ep)
	if err != nil {
		return nil, false, false // not a TLS matter: the client's own error says it
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // ends a blocked handshake or read
	defer stop()
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w with %s: %s", regcenter.ErrTLS, ep, fmt.Sprintf(format, a...))
	}
	if cfg == nil {
		if _, err := io.WriteString(conn, http2Preface); err != nil {
			return nil, false, false
		}
		var b [2]byte
		n, rerr := io.ReadFull(conn, b[:])
		switch {
		case ctx.Err() != nil:
			return nil, false, false
		case n == 2 && (b[0] == 0x15 || b[0] == 0x16) && b[1] == 0x03:
			// A TLS record: an alert or a handshake.
			return bad("the server answered in TLS: it serves TLS on that port, and the client is configured without TLS (set tlsCAFile, or tls)"), true, true
		case n > 0:
			return nil, false, true
		}
		if servesTLS(ctx, ep) {
			return bad("the server closed the connection and accepts a TLS handshake: it serves TLS on that port, and the client is configured without TLS (set tlsCAFile, or tls): %v", rerr), true, true
		}
		return nil, false, false
	}
	c := cfg.Clone()
	if c.ServerName == "" {
		host, _, err := net.SplitHostPort(ep)
		if err != nil {
			host = ep
		}
		c.ServerName = host
	}
	c.NextProtos = []string{"h2"}
	tc := tls.Client(conn, c)
	if err := tc.HandshakeContext(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, false, false
		}
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) {
			return bad("the server does not answer in TLS (is it a plain port?): %v", err), true, true
		}
		if ioFailure(err) {
			if servesPlain(ctx, ep) {
				return bad("the server closed the connection during the handshake and answers without TLS: it serves plain gRPC on that port, and the client is configured with TLS: %v", err), true, true
			}
			return bad("the server closed the connection during the handshake (is it a plain port?): %v", err), false, false
		}
		return bad("%v", err), true, true
	}
	// With TLS 1.3 a server refuses a client certificate (or its absence)
	// only after the client's handshake is done: read its first answer.
	if _, err := io.WriteString(tc, http2Preface); err != nil {
		if ctx.Err() != nil || ioFailure(err) {
			return nil, false, false
		}
		return bad("the server refused the client: %v", err), true, true
	}
	var b [1]byte
	if _, err := tc.Read(b[:]); err != nil {
		if ctx.Err() != nil {
			return nil, false, false
		}
		if ioFailure(err) {
			return bad("the server closed the connection after the handshake (does it require a client certificate?): %v", err), false, false
		}
		return bad("the server refused the client: %v", err), true, true
	}
	return nil, false, true
}

// dialProbe connects to ep for a probe: the connection is closed when ctx
// ends (which ends any read or handshake on it) and by done.
func dialProbe(ctx context.Context, ep string) (conn net.Conn, done func(), err error) {
	var d net.Dialer
	conn, err = d.DialContext(ctx, "tcp", ep)
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	return conn, func() { stop(); conn.Close() }, nil
}

// servesTLS reports whether ep completes a TLS handshake, trusting any
// certificate: only to tell a plain client why a TLS port closed on it.
func servesTLS(ctx context.Context, ep string) bool {
	conn, done, err := dialProbe(ctx, ep)
	if err != nil {
		return false
	}
	defer done()
	host, _, _ := net.SplitHostPort(ep)
	// Nothing is sent over this connection: the handshake is all it is for.
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, ServerName: host, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}}) //nolint:gosec // a probe that sends no data
	return tc.HandshakeContext(ctx) == nil
}

// servesPlain reports whether ep answers a plain HTTP/2 preface with a
// SETTINGS frame: only to tell a TLS client why the port closed on it.
func servesPlain(ctx context.Context, ep string) bool {
	conn, done, err := dialProbe(ctx, ep)
	if err != nil {
		return false
	}
	defer done()
	if _, err := io.WriteString(conn, http2Preface); err != nil {
		return false
	}
	var h [9]byte // a frame header: length (3), type, flags, stream (4)
	if _, err := io.ReadFull(conn, h[:]); err != nil {
		return false
	}
	const settings = 0x4
	return h[3] == settings
}

// ioFailure reports whether err is a connection that ended (closed, reset,
// timed out) rather than a TLS protocol failure.
func ioFailure(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) || (errors.As(err, &ne) && ne.Timeout())
}
