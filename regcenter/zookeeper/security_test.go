package zookeeper_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

const password = "s3cr3t-pw"

// refuseTimeout is the connect timeout of connects that must fail: each
// waits it out.
const refuseTimeout = 3 * time.Second

func writeSecret(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "digest")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDigestFileProtectsNamespace: the digest read from a file (with its
// trailing newline) is the same identity as the one given inline, and
// another password is refused.
func TestDigestFileProtectsNamespace(t *testing.T) {
	ns := fmt.Sprintf("aclfile%d", os.Getpid())
	owner := connect(t, regcenter.Config{Namespace: ns, DigestFile: writeSecret(t, "ops:"+password+"\n")})
	if _, err := owner.Create(ctx(t), "/job/config", []byte("x"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	same := connect(t, regcenter.Config{Namespace: ns, Digest: "ops:" + password})
	if data, _, err := same.Get(ctx(t), "/job/config"); err != nil || string(data) != "x" {
		t.Fatalf("inline digest on a namespace made with the file's: %q, %v", data, err)
	}
	_, err := zookeeper.Open(ctx(t), regcenter.Config{Servers: zk.Servers(), Namespace: ns,
		DigestFile: writeSecret(t, "ops:n0t-the-pw\r\n")})
	if !errors.Is(err, regcenter.ErrUnauthorized) {
		t.Fatalf("wrong digest in a file: got %v, want ErrUnauthorized", err)
	}
	if strings.Contains(err.Error(), "n0t-the-pw") {
		t.Errorf("error quotes the password: %v", err)
	}
}

// TestDigestFileErrorsNameTheFileNotTheSecret covers every way a digest
// file can be unusable; each fails before connecting, names the file and
// never shows what it holds.
func TestDigestFileErrorsNameTheFileNotTheSecret(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope"), "no such file"},
		{"directory", dir, "is a directory"},
		{"empty", writeSecret(t, "\n"), "is empty"},
		{"no colon", writeSecret(t, password+"\n"), "user:password"},
		{"no password", writeSecret(t, "ops:\n"), "user:password"},
		{"two lines", writeSecret(t, "ops:"+password+"\nops:"+password+"\n"), "one line"},
		{"huge", writeSecret(t, "ops:"+password+strings.Repeat("x", 5000)), "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := regcenter.Config{Servers: zk.Servers(), Namespace: "never", DigestFile: c.path}
			_, err := zookeeper.Open(ctx(t), cfg)
			if !errors.Is(err, regcenter.ErrInvalidConfig) {
				t.Fatalf("got %v, want ErrInvalidConfig", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.path) || !strings.Contains(msg, "digestFile") || !strings.Contains(msg, c.want) {
				t.Errorf("error %q does not name digestFile %s and say %q", msg, c.path, c.want)
			}
			if strings.Contains(msg, password) {
				t.Errorf("error shows the secret: %q", msg)
			}
		})
	}
	err := regcenter.Config{Servers: []string{"a:1"}, Digest: "ops:" + password, DigestFile: "/x"}.Validate()
	if !errors.Is(err, regcenter.ErrInvalidConfig) || !strings.Contains(err.Error(), "both") || strings.Contains(err.Error(), password) {
		t.Errorf("digest and digestFile: got %v", err)
	}
}

// TestTLSFilesThatCannotBeUsed fail before connecting, with the field and
// the file named.
func TestTLSFilesThatCannotBeUsed(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	base := regcenter.Config{Servers: []string{"127.0.0.1:1"}, ConnectTimeout: time.Second}
	for _, c := range []struct {
		name string
		edit func(*regcenter.Config)
		want []string
	}{
		{"missing CA", func(c *regcenter.Config) { c.TLSCAFile = missing }, []string{"tlsCAFile", missing, "no such file"}},
		{"CA not PEM", func(c *regcenter.Config) { c.TLSCAFile = notPEM }, []string{"tlsCAFile", notPEM, "no PEM certificate"}},
		{"cert without key", func(c *regcenter.Config) { c.TLSCertFile = notPEM }, []string{"tlsKeyFile", "both"}},
		{"missing cert", func(c *regcenter.Config) { c.TLSCertFile, c.TLSKeyFile = missing, notPEM }, []string{"tlsCertFile", missing}},
		{"cert not PEM", func(c *regcenter.Config) { c.TLSCertFile, c.TLSKeyFile = notPEM, notPEM }, []string{"tlsCertFile", notPEM}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			c.edit(&cfg)
			_, err := zookeeper.Open(ctx(t), cfg)
			if !errors.Is(err, regcenter.ErrInvalidConfig) {
				t.Fatalf("got %v, want ErrInvalidConfig", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	_, err := zookeeper.Open(ctx(t), regcenter.Config{Servers: base.Servers, TLS: true}, regcenter.WithTLSConfig(&tls.Config{}))
	if !errors.Is(err, regcenter.ErrInvalidConfig) {
		t.Errorf("TLS fields and WithTLSConfig together: got %v, want ErrInvalidConfig", err)
	}
}

// tlsConnect connects to the TLS cluster c with cfg's TLS settings.
func tlsConnect(t *testing.T, c *zktest.Cluster, cfg regcenter.Config, opts ...regcenter.Option) (*zookeeper.Center, error) {
	t.Helper()
	cfg.Servers = c.SecureServers()
	if cfg.Namespace == "" {
		cfg.Namespace = fmt.Sprintf("tls%d-%d", os.Getpid(), nsN.Add(1))
	}
	if cfg.ConnectTimeout == 0 {
		// Generous: a loaded machine's JVM may be slow to its first
		// handshakes. The refusals below set a short one.
		cfg.ConnectTimeout = 15 * time.Second
	}
	z, err := zookeeper.Open(ctx(t), cfg, opts...)
	if err == nil {
		t.Cleanup(func() { z.Close() })
	}
	return z, err
}

// roundTrip proves the session works: create a node, read it back.
func roundTrip(t *testing.T, z *zookeeper.Center) {
	t.Helper()
	if _, err := z.Create(ctx(t), "/job/config", []byte("over tls"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if data, _, err := z.Get(ctx(t), "/job/config"); err != nil || string(data) != "over tls" {
		t.Fatalf("get over TLS: %q, %v", data, err)
	}
}

// wantTLSFailure checks that a connect failed in time with ErrTLS and a
// cause that says what was wrong.
func wantTLSFailure(t *testing.T, err error, why string) {
	t.Helper()
	if err == nil {
		t.Fatal("connected")
	}
	if !errors.Is(err, regcenter.ErrUnreachable) || !errors.Is(err, regcenter.ErrTLS) {
		t.Fatalf("got %v, want ErrUnreachable wrapping ErrTLS", err)
	}
	if !strings.Contains(err.Error(), why) {
		t.Errorf("error %q does not say %q", err, why)
	}
	t.Logf("refused as expected: %v", err)
}

// TestMutualTLS runs against a ZooKeeper that serves TLS and needs a
// client certificate (ssl.clientAuth=need).
func TestMutualTLS(t *testing.T) {
	c := zktest.Start(t, zktest.WithMutualTLS())
	files, _ := c.TLS()

	t.Run("files", func(t *testing.T) {
		z, err := tlsConnect(t, c, regcenter.Config{TLSCAFile: files.CAFile, TLSCertFile: files.CertFile,
			TLSKeyFile: files.KeyFile, DigestFile: writeSecret(t, "ops:"+password+"\n")})
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, z)
	})
	t.Run("server name", func(t *testing.T) {
		z, err := tlsConnect(t, c, regcenter.Config{TLSCAFile: files.CAFile, TLSCertFile: files.CertFile,
			TLSKeyFile: files.KeyFile, TLSServerName: files.ServerName})
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, z)
	})
	t.Run("tls.Config", func(t *testing.T) {
		tc, err := files.Config()
		if err != nil {
			t.Fatal(err)
		}
		z, err := tlsConnect(t, c, regcenter.Config{}, regcenter.WithTLSConfig(tc))
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, z)
	})
	t.Run("no client certificate", func(t *testing.T) {
		_, err := tlsConnect(t, c, regcenter.Config{TLSCAFile: files.CAFile, ConnectTimeout: refuseTimeout})
		wantTLSFailure(t, err, "certificate")
	})
	t.Run("wrong CA", func(t *testing.T) {
		// The client certificate is no CA: it signed nothing.
		_, err := tlsConnect(t, c, regcenter.Config{TLSCAFile: files.CertFile, TLSCertFile: files.CertFile, TLSKeyFile: files.KeyFile,
			ConnectTimeout: refuseTimeout})
		wantTLSFailure(t, err, "unknown authority")
	})
	t.Run("wrong server name", func(t *testing.T) {
		_, err := tlsConnect(t, c, regcenter.Config{TLSCAFile: files.CAFile, TLSCertFile: files.CertFile,
			TLSKeyFile: files.KeyFile, TLSServerName: "zk.example.org", ConnectTimeout: refuseTimeout})
		wantTLSFailure(t, err, "zk.example.org")
	})
	t.Run("plain client on the TLS port", func(t *testing.T) {
		_, err := zookeeper.Open(ctx(t), regcenter.Config{Servers: c.SecureServers(), ConnectTimeout: 2 * time.Second})
		if !errors.Is(err, regcenter.ErrUnreachable) || !strings.Contains(err.Error(), "closed the connection") {
			t.Fatalf("got %v, want ErrUnreachable saying the server closed the connection", err)
		}
		t.Logf("refused as expected: %v", err)
	})
}

// TestTLSWithoutClientCertificate: a server that asks for no client
// certificate takes a client with the CA only, and a TLS client against a
// plain port fails with ErrTLS.
func TestTLSWithoutClientCertificate(t *testing.T) {
	c := zktest.Start(t, zktest.WithTLS())
	files, _ := c.TLS()
	z, err := tlsConnect(t, c, regcenter.Config{TLSCAFile: files.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, z)

	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = zookeeper.Open(cctx, regcenter.Config{Servers: c.Servers(), TLSCAFile: files.CAFile, ConnectTimeout: 2 * time.Second})
	if !errors.Is(err, regcenter.ErrUnreachable) || !errors.Is(err, regcenter.ErrTLS) {
		t.Fatalf("TLS client on a plain port: got %v, want ErrUnreachable wrapping ErrTLS", err)
	}
	if !strings.Contains(err.Error(), "plain clientPort") {
		t.Errorf("TLS client on a plain port: %q does not suggest the plain port", err)
	}
	t.Logf("TLS client on a plain port: %v", err)
}
