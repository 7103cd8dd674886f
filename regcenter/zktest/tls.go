package zktest

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

// ClientAuth says whether a TLS member asks clients for a certificate. The
// values are ZooKeeper's ssl.clientAuth settings.
type ClientAuth string

const (
	// ClientAuthNone: the server asks for no client certificate.
	ClientAuthNone ClientAuth = "none"
	// ClientAuthWant: the server asks for one and accepts clients without.
	ClientAuthWant ClientAuth = "want"
	// ClientAuthNeed: mutual TLS; a client without a certificate signed
	// by the cluster's CA is refused.
	ClientAuthNeed ClientAuth = "need"
)

// TLSOptions turns on a secure client port on every member.
type TLSOptions struct {
	// ClientAuth is the member's ssl.clientAuth. Default ClientAuthNone.
	ClientAuth ClientAuth
}

// WithTLS gives every member a TLS client port next to its plain one (see
// [Cluster.SecureServers] and [Cluster.TLS]); the server asks for no
// client certificate. For use with [Start] and [RunTests].
func WithTLS() func(*Options) {
	return func(o *Options) { o.TLS = &TLSOptions{ClientAuth: ClientAuthNone} }
}

// WithMutualTLS is [WithTLS] with ssl.clientAuth=need: clients must present
// the certificate in [TLSFiles.CertFile] (or another the CA signed).
func WithMutualTLS() func(*Options) {
	return func(o *Options) { o.TLS = &TLSOptions{ClientAuth: ClientAuthNeed} }
}

// TLSFiles are the PEM files a client needs to reach a TLS cluster. They
// live in the cluster's directory and are made fresh for every cluster: a
// throwaway CA signs the servers' certificate (for 127.0.0.1 and
// localhost) and one client certificate.
type TLSFiles struct {
	// CAFile holds the CA certificate that signed the servers' and the
	// client's certificates.
	CAFile string
	// CertFile and KeyFile are a client certificate and its private key
	// (PKCS #8), for mutual TLS.
	CertFile, KeyFile string
	// ServerName is a name the servers' certificate is valid for.
	ServerName string
}

// Config returns a fresh *tls.Config that trusts the cluster's CA and
// presents the client certificate.
func (f TLSFiles) Config() (*tls.Config, error) {
	ca, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("zktest: %s holds no PEM certificate", f.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// serverTLS is what the members' configs point at.
type serverTLS struct {
	client               TLSFiles
	keyStore, trustStore string // PEM: server key+cert; CA
	clientAuth           ClientAuth
}

// makeTLS writes a CA, a server certificate and a client certificate into
// dir/tls.
func makeTLS(dir string, clientAuth ClientAuth) (*serverTLS, error) {
	dir = filepath.Join(dir, "tls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "zktest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("zktest: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
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
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
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
	srvCert, srvKey, err := leaf(2, "zktest server", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, fmt.Errorf("zktest: server certificate: %w", err)
	}
	cliCert, cliKey, err := leaf(3, "zktest client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, fmt.Errorf("zktest: client certificate: %w", err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	s := &serverTLS{
		client: TLSFiles{
			CAFile:     filepath.Join(dir, "ca.pem"),
			CertFile:   filepath.Join(dir, "client.pem"),
			KeyFile:    filepath.Join(dir, "client-key.pem"),
			ServerName: "localhost",
		},
		keyStore:   filepath.Join(dir, "server-keystore.pem"),
		trustStore: filepath.Join(dir, "server-truststore.pem"),
		clientAuth: clientAuth,
	}
	files := map[string][]byte{
		s.client.CAFile:   caPEM,
		s.client.CertFile: cliCert,
		s.client.KeyFile:  cliKey,
		// ZooKeeper's PEM key store: the private key and its chain in one file.
		s.keyStore:   append(append(append([]byte{}, srvKey...), srvCert...), caPEM...),
		s.trustStore: caPEM,
	}
	for name, body := range files {
		if err := os.WriteFile(name, body, 0o600); err != nil {
			return nil, fmt.Errorf("zktest: %w", err)
		}
	}
	return s, nil
}
