package regcenter

import "errors"

// Sentinel errors. Errors returned by this package wrap one of these (or a
// go-zookeeper error) so callers can test them with errors.Is.
var (
	// ErrInvalidConfig means a Config field is missing or malformed.
	ErrInvalidConfig = errors.New("regcenter: invalid config")
	// ErrUnreachable means no registry server (ZooKeeper member or etcd
	// endpoint) gave us a session within the connect timeout.
	ErrUnreachable = errors.New("regcenter: registry unreachable")
	// ErrUnauthorized means the configured digest may not access the
	// namespace (or none was given and one is required).
	ErrUnauthorized = errors.New("regcenter: not authorized")
	// ErrTLS means a TLS handshake with a registry server failed: a
	// certificate the other side does not trust, a server that does not
	// speak TLS on that port, or a client certificate it refused.
	ErrTLS = errors.New("regcenter: tls handshake failed")
	// ErrClosed means the registry center was closed.
	ErrClosed = errors.New("regcenter: closed")
	// ErrNodeExists is returned when creating a node that already exists.
	ErrNodeExists = errors.New("regcenter: node exists")
	// ErrNoNode is returned when a node does not exist.
	ErrNoNode = errors.New("regcenter: no node")
	// ErrBadVersion is returned when a versioned write or check fails.
	ErrBadVersion = errors.New("regcenter: version mismatch")
	// ErrNotEmpty is returned when deleting a node that has children.
	ErrNotEmpty = errors.New("regcenter: node has children")
	// ErrTooLarge means a write was larger than Config.MaxNodeBytes and
	// was not sent; the error names the path and the sizes.
	ErrTooLarge = errors.New("regcenter: write too large")
	// ErrSessionLost means the session that owned the caller's lease ended
	// (expired, or the lease could no longer be proven live).
	ErrSessionLost = errors.New("regcenter: session lost")
)

// ErrConnectionLoss means the connection to the registry broke while a
// request was outstanding; a write may or may not have been applied.
var ErrConnectionLoss = errors.New("regcenter: connection to the registry lost")
