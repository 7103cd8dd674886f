package regcenter

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
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
// file; the files are read when a center connects.
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
