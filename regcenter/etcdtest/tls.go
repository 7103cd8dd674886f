package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TLSOptions turns on TLS on every member's client port.
type TLSOptions struct {
	// ClientCertAuth makes the members refuse clients without a
	// certificate signed by the cluster's CA (mutual TLS).
	ClientCertAuth bool
}

// WithTLS serves clients over TLS only (see [Cluster.TLS]); no client
// certificate is needed. For use with [Start] and [RunTests].
func WithTLS() func(*Options) {
	return func(o *Options) { o.TLS = &TLSOptions{} }
}

// WithMutualTLS is [WithTLS] with client certificates required: clients
// must present [TLSFiles.CertFile] (or another certificate the CA signed).
func WithMutualTLS() func(*Options) {
	return func(o *Options) { o.TLS = &TLSOptions{ClientCertAuth: true} }
}

// TLSFiles are the PEM files a client needs to reach a TLS cluster, made
// fresh for every cluster in its directory: a throwaway CA signs the
// members' certificate (for 127.0.0.1 and localhost) and one client
// certificate.
type TLSFiles struct {
	// CAFile holds the CA certificate.
	CAFile string
	// CertFile and KeyFile are a client certificate and its key.
	CertFile, KeyFile string
	// ServerName is a name the members' certificate is valid for.
	ServerName string
}

// Config returns a *tls.Config that trusts the cluster's CA and presents
// the client certificate.
func (f TLSFiles) Config() (*tls.Config, error) {
	ca, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("etcdtest: %s holds no PEM certificate", f.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// serverTLS is what the members are started with.
type serverTLS struct {
	client            TLSFiles
	certFile, keyFile string // the members' certificate and key
	clientCertAuth    bool
}

// makeTLS writes a CA, a member certificate and a client certificate into
// dir/tls.
func makeTLS(dir string, clientCertAuth bool) (*serverTLS, error) {
	dir = filepath.Join(dir, "tls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "etcdtest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	leaf := func(serial int64, cn string, usage ...x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(7 * 24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  usage,
			DNSNames:     []string{"localhost"},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		pk, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), nil
	}
	// etcd's members dial each other's client port with their own
	// certificate too (the gRPC gateway), so it serves both ways.
	srvCert, srvKey, err := leaf(2, "etcdtest member", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: member certificate: %w", err)
	}
	cliCert, cliKey, err := leaf(3, "etcdtest client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: client certificate: %w", err)
	}
	s := &serverTLS{
		client: TLSFiles{
			CAFile:     filepath.Join(dir, "ca.pem"),
			CertFile:   filepath.Join(dir, "client.pem"),
			KeyFile:    filepath.Join(dir, "client-key.pem"),
			ServerName: "localhost",
		},
		certFile:       filepath.Join(dir, "member.pem"),
		keyFile:        filepath.Join(dir, "member-key.pem"),
		clientCertAuth: clientCertAuth,
	}
	files := map[string][]byte{
		s.client.CAFile:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		s.client.CertFile: cliCert,
		s.client.KeyFile:  cliKey,
		s.certFile:        srvCert,
		s.keyFile:         srvKey,
	}
	for name, body := range files {
		if err := os.WriteFile(name, body, 0o600); err != nil {
			return nil, fmt.Errorf("etcdtest: %w", err)
		}
	}
	return s, nil
}
