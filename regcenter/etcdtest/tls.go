package etcdtest

import (
	"fmt"
	"path/filepath"

	"github.com/shardjob/shardjob/internal/testing/testserver"
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
// certificate. CAFile holds the CA's certificate, CertFile and KeyFile the
// client certificate and its key, and ServerName is a name the members'
// certificate is valid for. Its Config method returns a *tls.Config that
// trusts the CA and presents the client certificate.
type TLSFiles = testserver.TLSFiles

// serverTLS is what the members are started with.
type serverTLS struct {
	client            TLSFiles
	certFile, keyFile string // the members' certificate and key
	clientCertAuth    bool
}

// makeTLS writes a CA, a member certificate and a client certificate into
// dir/tls.
func makeTLS(dir string, clientCertAuth bool) (*serverTLS, error) {
	// etcd's members dial each other's client port with their own
	// certificate too (the gRPC gateway), so it serves both ways.
	c, err := testserver.WriteCerts(filepath.Join(dir, "tls"), "etcdtest", true)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %w", err)
	}
	return &serverTLS{
		client:         c.Client,
		certFile:       c.ServerCertFile,
		keyFile:        c.ServerKeyFile,
		clientCertAuth: clientCertAuth,
	}, nil
}
