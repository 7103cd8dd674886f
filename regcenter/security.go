package regcenter

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
)

// maxDigestFile bounds what is read of a DigestFile: a digest is one short
// line, and a huge file is a mistake, not a credential.
const maxDigestFile = 4 << 10

// redacted replaces secrets in String, GoString and LogValue.
const redacted = "REDACTED"

// tlsOn reports whether c asks for TLS.
func (c Config) tlsOn() bool {
	return c.TLS || c.TLSCAFile != "" || c.TLSCertFile != "" || c.TLSKeyFile != "" ||
		c.TLSServerName != "" || c.TLSInsecureSkipVerify
}

// validateSecurity checks the digest and TLS fields without reading any
// file; the files are read by NewZooKeeper.
func (c Config) validateSecurity() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	if c.Digest != "" && c.DigestFile != "" {
		return bad("digest and digestFile are both set; use one")
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return bad("tlsCertFile and tlsKeyFile: set both (a client certificate and its key) or neither")
	}
	return nil
}

// ResolveDigest returns the digest credentials: Digest, or the contents of
// DigestFile with one trailing newline trimmed. A DigestFile that is
// missing, unreadable, empty or not "user:password" is an error wrapping
// [ErrInvalidConfig] that names the file and never quotes it.
func (c Config) ResolveDigest() (string, error) {
	if c.DigestFile == "" {
		return c.Digest, nil
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: digestFile: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	f, err := os.Open(c.DigestFile)
	if err != nil {
		return "", bad("%v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDigestFile+1))
	if err != nil {
		return "", bad("%v", err)
	}
	if len(b) > maxDigestFile {
		return "", bad("%s is larger than %d bytes; it must hold one line, user:password", c.DigestFile, maxDigestFile)
	}
	d := string(b)
	d = strings.TrimSuffix(d, "\n")
	d = strings.TrimSuffix(d, "\r")
	if d == "" {
		return "", bad("%s is empty; it must hold user:password", c.DigestFile)
	}
	user, pass, ok := strings.Cut(d, ":")
	if !ok || user == "" || pass == "" || strings.ContainsAny(d, "\r\n") {
		return "", bad("%s must hold one line, user:password", c.DigestFile)
	}
	return d, nil
}

// LoadTLS builds the *tls.Config that c's TLS fields describe, reading the
// CA, certificate and key files. It returns nil without error when c does
// not ask for TLS. A file that is missing or does not parse is an error
// wrapping [ErrInvalidConfig] that names it. The result sets no
// ServerName unless TLSServerName does: the dialer then uses each
// server's host.
func (c Config) LoadTLS() (*tls.Config, error) {
	if !c.tlsOn() {
		return nil, nil
	}
	bad := func(field string, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, a...))
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         c.TLSServerName,
		InsecureSkipVerify: c.TLSInsecureSkipVerify, // off by default, documented as for trials only
	}
	if c.TLSCAFile != "" {
		pem, err := os.ReadFile(c.TLSCAFile)
		if err != nil {
			return nil, bad("tlsCAFile", "%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, bad("tlsCAFile", "%s holds no PEM certificate", c.TLSCAFile)
		}
		cfg.RootCAs = pool
	}
	if c.TLSCertFile != "" || c.TLSKeyFile != "" {
		for _, f := range []struct{ field, name string }{{"tlsCertFile", c.TLSCertFile}, {"tlsKeyFile", c.TLSKeyFile}} {
			if f.name == "" {
				return nil, bad(f.field, "missing: set tlsCertFile and tlsKeyFile together")
			}
			if _, err := os.Stat(f.name); err != nil {
				return nil, bad(f.field, "%v", err)
			}
		}
		cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			// crypto/tls names what failed (no certificate, no key,
			// key does not match), never the key's bytes.
			return nil, bad("tlsCertFile/tlsKeyFile", "%s and %s: %v", c.TLSCertFile, c.TLSKeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// The files an embedded etcd member (package regcenter/embedded) keeps in
// its Dir for the other processes of its host, read by
// [Config.EmbeddedDir].
const (
	// EmbeddedCredentialsFile holds the member's "user:password", one
	// line, as a DigestFile does; owner-only (0600) in an owner-only Dir.
	EmbeddedCredentialsFile = "credentials"
	// EmbeddedEndpointFile holds the member's client address,
	// "127.0.0.1:port", while it runs.
	EmbeddedEndpointFile = "endpoint"
)

// resolveEmbedded returns c pointed at the member in c.EmbeddedDir: Etcd
// is the address in its endpoint file and Digest the credentials in its
// credentials file. Either file missing or unreadable is an
// [ErrInvalidConfig] that names it and never quotes the credentials.
func (c Config) resolveEmbedded() (Config, error) {
	dir := c.EmbeddedDir
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: embeddedDir %s: %s", ErrInvalidConfig, dir, fmt.Sprintf(format, a...))
	}
	if fi, err := os.Stat(dir); err != nil {
		return c, bad("%v", err)
	} else if !fi.IsDir() {
		return c, bad("not a directory")
	}
	ep, err := readEmbeddedEndpoint(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return c, bad("%s is missing: is the member running? (it writes the file when it starts serving)", EmbeddedEndpointFile)
		}
		return c, bad("%v", err)
	}
	credFile := filepath.Join(dir, EmbeddedCredentialsFile)
	if _, err := os.Stat(credFile); errors.Is(err, os.ErrNotExist) {
		return c, bad("%s is missing: the member writes it when it first starts", EmbeddedCredentialsFile)
	}
	digest, err := Config{DigestFile: credFile}.ResolveDigest()
	if err != nil {
		// It names the file, never what it holds.
		return c, fmt.Errorf("%w (embeddedDir %s: only the member's owner may read its credentials)", err, dir)
	}
	c.Etcd, c.Digest, c.DigestFile, c.EmbeddedDir = []string{ep}, digest, "", ""
	return c, nil
}

// readEmbeddedEndpoint returns the address in dir's endpoint file.
func readEmbeddedEndpoint(dir string) (string, error) {
	epFile := filepath.Join(dir, EmbeddedEndpointFile)
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
			return nil, fmt.Errorf("embedded member in %s: %s is missing: no process serves it now", dir, EmbeddedEndpointFile)
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

// settle returns what a constructor connects with: c with its defaults,
// its digest read (Digest holds the credentials, wherever they came from;
// DigestFile is cleared), and the options applied, their TLS being the
// WithTLSConfig one or else the one c's TLS fields describe (nil: none).
// c must be valid. TLS given both ways is an [ErrInvalidConfig].
func (c Config) settle(opts []Option) (Config, options, error) {
	c = c.WithDefaults()
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	if c.EmbeddedDir != "" {
		var err error
		if c, err = c.resolveEmbedded(); err != nil {
			return Config{}, options{}, err
		}
	}
	digest, err := c.ResolveDigest()
	if err != nil {
		return Config{}, options{}, err
	}
	c.Digest, c.DigestFile = digest, ""
	tlsCfg, err := c.LoadTLS()
	if err != nil {
		return Config{}, options{}, err
	}
	if o.tls != nil {
		if tlsCfg != nil {
			return Config{}, options{}, fmt.Errorf("%w: TLS is given both by WithTLSConfig and by the config's tls fields; use one", ErrInvalidConfig)
		}
		tlsCfg = o.tls
	}
	o.tls = tlsCfg
	return c, o, nil
}

// String renders c for people, with the digest's password redacted.
func (c Config) String() string {
	type plain Config // no methods: no recursion
	p := plain(c)
	p.Digest = redactDigest(c.Digest)
	if p.URL != "" {
		p.URL = redactURL(p.URL)
	}
	return fmt.Sprintf("%+v", p)
}

// GoString is String, so %#v does not print the password either.
func (c Config) GoString() string { return "regcenter.Config" + c.String() }

// LogValue renders c for log/slog, with the digest's password redacted.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.Any("servers", c.Servers),
		slog.String("namespace", c.Namespace),
		slog.Duration("sessionTimeout", c.SessionTimeout),
		slog.Duration("connectTimeout", c.ConnectTimeout),
	}
	if len(c.Etcd) > 0 {
		attrs = append(attrs, slog.Any("etcd", c.Etcd))
	}
	if c.EmbeddedDir != "" {
		attrs = append(attrs, slog.String("embeddedDir", c.EmbeddedDir))
	}
	if c.URL != "" {
		attrs = append(attrs, slog.String("url", redactURL(c.URL)))
	}
	if c.Digest != "" {
		attrs = append(attrs, slog.String("digest", redactDigest(c.Digest)))
	}
	if c.DigestFile != "" {
		attrs = append(attrs, slog.String("digestFile", c.DigestFile))
	}
	if c.tlsOn() {
		attrs = append(attrs, slog.Bool("tls", true), slog.String("tlsCAFile", c.TLSCAFile),
			slog.String("tlsCertFile", c.TLSCertFile), slog.String("tlsServerName", c.TLSServerName),
			slog.Bool("tlsInsecureSkipVerify", c.TLSInsecureSkipVerify))
	}
	return slog.GroupValue(attrs...)
}

// redactDigest keeps the user of "user:password" and hides the rest.
func redactDigest(d string) string {
	if d == "" {
		return ""
	}
	user, _, ok := strings.Cut(d, ":")
	if !ok {
		return redacted
	}
	return user + ":" + redacted
}

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
// an error wrapping [ErrTLS] that names the handshake's failure, or nil
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
		return fmt.Errorf("%w with %s: %s", ErrTLS, ep, fmt.Sprintf(format, a...))
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
