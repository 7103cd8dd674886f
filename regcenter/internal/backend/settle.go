package backend

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"github.com/shardjob/shardjob/regcenter"
)

// Settle returns what a constructor connects with: cfg with its defaults
// and its digest read (Digest holds the credentials, wherever they came
// from; DigestFile is cleared), the logger of opts, and the TLS config:
// the one regcenter.WithTLSConfig gave, or else the one cfg's TLS fields
// describe (nil: none). cfg must be valid. TLS given both ways is a
// regcenter.ErrInvalidConfig.
func Settle(cfg regcenter.Config, opts []regcenter.Option) (regcenter.Config, *slog.Logger, *tls.Config, error) {
	cfg = cfg.WithDefaults()
	logger, tlsOpt := regcenter.ResolveOptions(opts...)
	digest, err := cfg.ResolveDigest()
	if err != nil {
		return regcenter.Config{}, nil, nil, err
	}
	cfg.Digest, cfg.DigestFile = digest, ""
	tlsCfg, err := cfg.LoadTLS()
	if err != nil {
		return regcenter.Config{}, nil, nil, err
	}
	if tlsOpt != nil {
		if tlsCfg != nil {
			return regcenter.Config{}, nil, nil, fmt.Errorf("%w: TLS is given both by WithTLSConfig and by the config's tls fields; use one", regcenter.ErrInvalidConfig)
		}
		tlsCfg = tlsOpt
	}
	return cfg, logger, tlsCfg, nil
}
