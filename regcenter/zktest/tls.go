package zktest

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/shardjob/shardjob/internal/testing/testserver"
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
// localhost) and one client certificate. CAFile holds the CA's
// certificate, CertFile and KeyFile the client certificate and its
// private key (PKCS #8, for mutual TLS), and ServerName is a name the
// servers' certificate is valid for. Its Config method returns a fresh
// *tls.Config that trusts the CA and presents the client certificate.
type TLSFiles = testserver.TLSFiles

// serverTLS is what the members' configs point at.
type serverTLS struct {
	client               TLSFiles
	keyStore, trustStore string // PEM: server key+cert+CA; CA
	clientAuth           ClientAuth
}

// makeTLS writes a CA, a server certificate and a client certificate into
// dir/tls, and the server's key store.
func makeTLS(dir string, clientAuth ClientAuth) (*serverTLS, error) {
	c, err := testserver.WriteCerts(filepath.Join(dir, "tls"), "zktest", false)
	if err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	// ZooKeeper's PEM key store: the private key and its chain in one file.
	var keyStore []byte
	for _, f := range []string{c.ServerKeyFile, c.ServerCertFile, c.Client.CAFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("zktest: %w", err)
		}
		keyStore = append(keyStore, b...)
	}
	s := &serverTLS{
		client:     c.Client,
		keyStore:   filepath.Join(filepath.Dir(c.ServerKeyFile), "server-keystore.pem"),
		trustStore: c.Client.CAFile,
		clientAuth: clientAuth,
	}
	if err := os.WriteFile(s.keyStore, keyStore, 0o600); err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	return s, nil
}
