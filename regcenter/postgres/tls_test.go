package postgres_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/postgres"
)

// makeCA writes a CA certificate to dir/name.pem and returns what signs
// with it.
func makeCA(t *testing.T, dir, name string) (string, *x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name+".pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, ca, key
}

// The server's certificate verified against the CA the URL names
// (sslmode=verify-full) or the Config's TLS fields connects over TLS; a
// server whose certificate another CA signed is refused with ErrTLS.
func TestVerifyFull(t *testing.T) {
	srv := ownServer(t)
	dir := t.TempDir()
	caFile, ca, caKey := makeCA(t, dir, "rc-ca")
	otherCA, _, _ := makeCA(t, dir, "other-ca")

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "pg"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// The server reads its key only if its own user owns it, mode 0600.
	info, err := os.Stat(filepath.Join(srv.Dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	for name, data := range map[string][]byte{
		"server.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"server.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}),
	} {
		p := filepath.Join(srv.Dir, "data", name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, int(st.Uid), int(st.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := ctxFor(t)
	admin, err := pgx.Connect(ctx, srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, q := range []string{"ALTER SYSTEM SET ssl = on", "SELECT pg_reload_conf()"} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	plain := newDatabase(t, srv)
	usesTLS := func(c *postgres.Center) bool {
		var on bool
		if err := c.Pool().QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&on); err != nil {
			t.Fatal(err)
		}
		return on
	}
	byURL := strings.Replace(plain, "sslmode=disable", "sslmode=verify-full&sslrootcert="+caFile, 1)
	deadline := time.Now().Add(20 * time.Second)
	var c *postgres.Center
	for { // the reload takes effect shortly after it is asked for
		c, err = postgres.Open(ctx, regcenter.Config{URL: byURL, Namespace: "tls", SessionTimeout: sessionTimeout})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("sslmode=verify-full with the server's CA: %v", err)
	}
	defer c.Close()
	if !usesTLS(c) {
		t.Error("sslmode=verify-full: the connection does not use TLS")
	}
	byConfig := newCenter(t, strings.Replace(plain, "?sslmode=disable", "", 1), regcenter.Config{Namespace: "tls", TLSCAFile: caFile})
	if !usesTLS(byConfig) {
		t.Error("Config.TLSCAFile: the connection does not use TLS")
	}
	// A multi-host URL (a primary and its standbys) keeps its hosts when
	// the Config gives the TLS settings: here the first host is down.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := l.Addr().String()
	l.Close()
	multi := strings.Replace(strings.Replace(plain, "?sslmode=disable", "", 1), "127.0.0.1:", down+",127.0.0.1:", 1)
	if !usesTLS(newCenter(t, multi, regcenter.Config{Namespace: "tls", TLSCAFile: caFile})) {
		t.Error("Config.TLSCAFile, the second host of a URL: the connection does not use TLS")
	}
	for name, cfg := range map[string]regcenter.Config{
		"sslrootcert of another CA": {URL: strings.Replace(byURL, caFile, otherCA, 1)},
		"TLSCAFile of another CA":   {URL: strings.Replace(plain, "?sslmode=disable", "", 1), TLSCAFile: otherCA},
	} {
		cfg.Namespace = "tls"
		if _, err := postgres.Open(ctx, cfg); !errors.Is(err, regcenter.ErrTLS) {
			t.Errorf("%s: %v, want ErrTLS", name, err)
		}
	}
}
