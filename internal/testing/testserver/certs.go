package testserver

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

// TLSFiles are the PEM files a client needs to reach a TLS test server,
// which [WriteCerts] makes: a throwaway CA signs the server's certificate
// (for 127.0.0.1, ::1 and localhost) and one client certificate.
type TLSFiles struct {
	// CAFile holds the CA certificate that signed the server's and the
	// client's certificates.
	CAFile string
	// CertFile and KeyFile are a client certificate and its private key
	// (PKCS #8), for mutual TLS.
	CertFile, KeyFile string
	// ServerName is a name the server's certificate is valid for.
	ServerName string
}

// Config returns a fresh *tls.Config that trusts the CA and presents the
// client certificate.
func (f TLSFiles) Config() (*tls.Config, error) {
	ca, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s holds no PEM certificate", f.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Certs are the PEM files [WriteCerts] writes: the client's, and the
// server's certificate and private key.
type Certs struct {
	Client                        TLSFiles
	ServerCertFile, ServerKeyFile string
}

// WriteCerts makes a CA valid for a week and a server and a client
// certificate signed by it, and writes them into dir (made if missing,
// owner only). name names them ("zktest CA", "zktest server", ...). The
// server's certificate is for server authentication, and for client
// authentication too when serverIsClient is set (etcd's members dial
// each other's client port with it).
func WriteCerts(dir, name string, serverIsClient bool) (Certs, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Certs{}, err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Certs{}, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name + " CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return Certs{}, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return Certs{}, err
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
	serverUsage := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	if serverIsClient {
		serverUsage = append(serverUsage, x509.ExtKeyUsageClientAuth)
	}
	srvCert, srvKey, err := leaf(2, name+" server", serverUsage...)
	if err != nil {
		return Certs{}, fmt.Errorf("server certificate: %w", err)
	}
	cliCert, cliKey, err := leaf(3, name+" client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return Certs{}, fmt.Errorf("client certificate: %w", err)
	}
	c := Certs{
		Client: TLSFiles{
			CAFile:     filepath.Join(dir, "ca.pem"),
			CertFile:   filepath.Join(dir, "client.pem"),
			KeyFile:    filepath.Join(dir, "client-key.pem"),
			ServerName: "localhost",
		},
		ServerCertFile: filepath.Join(dir, "server.pem"),
		ServerKeyFile:  filepath.Join(dir, "server-key.pem"),
	}
	for file, body := range map[string][]byte{
		c.Client.CAFile:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		c.Client.CertFile: cliCert,
		c.Client.KeyFile:  cliKey,
		c.ServerCertFile:  srvCert,
		c.ServerKeyFile:   srvKey,
	} {
		if err := os.WriteFile(file, body, 0o600); err != nil {
			return Certs{}, err
		}
	}
	return c, nil
}
