package zookeeper

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// tlsDial completes a TLS handshake on c, bounded by timeout, with cfg; a
// cfg without a ServerName verifies the host of address. A failed
// handshake wraps [regcenter.ErrTLS] and closes c.
func tlsDial(c net.Conn, cfg *tls.Config, address string, timeout time.Duration) (net.Conn, error) {
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			host = address
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(c, cfg)
	if timeout > 0 {
		if err := tc.SetDeadline(time.Now().Add(timeout)); err != nil {
			c.Close()
			return nil, fmt.Errorf("%w with %s: %w", regcenter.ErrTLS, address, err)
		}
	}
	if err := tc.Handshake(); err != nil {
		c.Close()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w with %s: the server closed the connection (is this its plain clientPort?): %w", regcenter.ErrTLS, address, err)
		}
		return nil, fmt.Errorf("%w with %s: %w", regcenter.ErrTLS, address, err)
	}
	if err := tc.SetDeadline(time.Time{}); err != nil {
		tc.Close()
		return nil, fmt.Errorf("%w with %s: %w", regcenter.ErrTLS, address, err)
	}
	return tc, nil
}

// dialConn opens a connection to address for the dialer: TCP, then the
// TLS handshake when TLS is on. It records why an attempt failed, and
// wraps the connection so that a server closing it before answering
// anything is recorded too, so a connect that runs out of time can say
// why (go-zookeeper only logs it and tries again).
func (z *Center) dialConn(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		z.setDialErr(err)
		return nil, err
	}
	if z.tls != nil {
		if c, err = tlsDial(c, z.tls, address, timeout); err != nil {
			z.setDialErr(err)
			return nil, err
		}
	}
	return &causeConn{Conn: c, z: z, address: address, tls: z.tls != nil}, nil
}

// causeConn records a read error that ends a connection before the
// server sent a single byte: a server that refused the client (with TLS
// 1.3 a client certificate is refused only after the handshake) or that
// speaks TLS where the client does not.
type causeConn struct {
	net.Conn
	z       *Center
	address string
	tls     bool
	got     atomic.Bool // the server has sent something
}

func (c *causeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.got.Store(true)
	}
	if err != nil && !c.got.Load() {
		switch {
		case c.tls:
			c.z.setDialErr(fmt.Errorf("%w with %s: %w", regcenter.ErrTLS, c.address, err))
		case errors.Is(err, io.EOF):
			c.z.setDialErr(fmt.Errorf("%s closed the connection before answering (does it serve TLS only on that port?): %w", c.address, err))
		default:
			c.z.setDialErr(err)
		}
	}
	return n, err
}

// setDialErr records why the latest connection attempt failed.
func (z *Center) setDialErr(err error) {
	z.dialMu.Lock()
	z.dialErr = err
	z.dialMu.Unlock()
}

// lastDialErr returns why the latest failed connection attempt failed, or
// nil.
func (z *Center) lastDialErr() error {
	z.dialMu.Lock()
	defer z.dialMu.Unlock()
	return z.dialErr
}
