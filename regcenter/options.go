package regcenter

import (
	"crypto/tls"
	"log/slog"
)

// Option configures a center: [Open], and the constructor of each
// backend package.
type Option func(*options)

type options struct {
	logger *slog.Logger
	tls    *tls.Config
}

// WithTLSConfig connects over TLS with cfg (cloned), for programs that
// build their own: certificates from memory, a custom verifier. A cfg
// without ServerName verifies the host of each server address. The
// Config's TLS fields must then be unset. Default: TLS as the Config's
// TLS fields say, or none.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(o *options) {
		if cfg != nil {
			o.tls = cfg.Clone()
		}
	}
}

// WithLogger sets the logger (default slog.Default()). A client
// library's own chatter (ZooKeeper's) goes to it at debug level.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// ResolveOptions returns what opts set: the logger (slog.Default() when
// none is given) and the TLS config of [WithTLSConfig] (nil when none is).
// Backends in other packages read their options with it.
func ResolveOptions(opts ...Option) (logger *slog.Logger, tlsCfg *tls.Config) {
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	return o.logger, o.tls
}
