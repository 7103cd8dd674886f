package etcd_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/etcd"
	"github.com/shardjob/shardjob/regcenter/etcdtest"
)

// tlsFailTimeout is the connect timeout of a connect that must fail. It is
// a bound, not a measure: the failures below are known at the first
// handshake, and a long bound keeps a busy machine from turning a TLS
// failure into a timeout.
const tlsFailTimeout = 20 * time.Second

// writeOtherCA writes a CA certificate that signed nothing the test
// clusters serve, and returns its file.
func writeOtherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(7),
		Subject:               pkix.Name{CommonName: "another CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "other-ca.pem")
	if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestEtcdTLSVerifiesTheServerName: the server's certificate must be valid
// for TLSServerName when it is set (it names localhost and 127.0.0.1),
// and for the endpoint's host when it is not.
func TestEtcdTLSVerifiesTheServerName(t *testing.T) {
	cluster := etcdtest.Start(t, etcdtest.WithMutualTLS())
	files, _ := cluster.TLS()
	good := regcenter.Config{TLSCAFile: files.CAFile, TLSCertFile: files.CertFile, TLSKeyFile: files.KeyFile, Namespace: "names"}
	for _, name := range []string{"", files.ServerName} {
		cfg := good
		cfg.TLSServerName = name
		c := newEtcdCenter(t, cluster, cfg)
		if _, err := c.Create(testCtx(t), "/job", nil, regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
			t.Fatalf("server name %q: %v", name, err)
		}
	}
	cfg := good
	cfg.Etcd, cfg.TLSServerName, cfg.ConnectTimeout = cluster.Endpoints(), "wrong.local", tlsFailTimeout
	c, err := etcd.Open(testCtx(t), cfg)
	if err == nil {
		c.Close()
		t.Fatal("connected with --tls-server-name wrong.local to a member whose certificate names localhost and 127.0.0.1")
	}
	wantEtcdTLSFailure(t, err, "wrong.local")
}

// TestEtcdTLSFailuresNameTheCause: each way a TLS connection to etcd
// cannot be made fails with ErrTLS and the handshake's own reason, not
// with a deadline.
func TestEtcdTLSFailuresNameTheCause(t *testing.T) {
	mutual := etcdtest.Start(t, etcdtest.WithMutualTLS())
	plain := etcdtest.Start(t)
	files, _ := mutual.TLS()
	otherCA := writeOtherCA(t)
	for _, tc := range []struct {
		name    string
		cluster *etcdtest.Cluster
		cfg     regcenter.Config
		want    string // in the error's text
	}{
		{"unknown authority", mutual, regcenter.Config{TLSCAFile: otherCA, TLSCertFile: files.CertFile, TLSKeyFile: files.KeyFile}, "unknown authority"},
		{"name mismatch", mutual, regcenter.Config{TLSCAFile: files.CAFile, TLSCertFile: files.CertFile, TLSKeyFile: files.KeyFile, TLSServerName: "etcd.example.org"}, "etcd.example.org"},
		{"no client certificate", mutual, regcenter.Config{TLSCAFile: files.CAFile}, "certificate"},
		{"plain client on a TLS port", mutual, regcenter.Config{}, "TLS"},
		{"TLS client on a plain port", plain, regcenter.Config{TLSCAFile: files.CAFile}, "TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Etcd, cfg.Namespace, cfg.ConnectTimeout = tc.cluster.Endpoints(), "tlsfail", tlsFailTimeout
			c, err := etcd.Open(testCtx(t), cfg)
			if err == nil {
				c.Close()
				t.Fatal("connected")
			}
			wantEtcdTLSFailure(t, err, tc.want)
			t.Log(err)
		})
	}
}

// wantEtcdTLSFailure checks that err is a TLS failure (wrapping ErrTLS, and
// ErrUnreachable as on ZooKeeper) whose text has want and is not a
// deadline's.
func wantEtcdTLSFailure(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, regcenter.ErrTLS) || !errors.Is(err, regcenter.ErrUnreachable) {
		t.Fatalf("got %v, want ErrUnreachable wrapping ErrTLS", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("%q does not name the cause (%q)", err, want)
	}
	if strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("%q: the TLS failure ended as a deadline", err)
	}
}
