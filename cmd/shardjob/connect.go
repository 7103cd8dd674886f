package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/jobfile"
	"github.com/shardjob/shardjob/regcenter"
)

// regcenterConfig resolves how to reach the registry (ZooKeeper with --zk,
// etcd with --etcd, an embedded member with --embedded, PostgreSQL with
// --pg), as the SDK does, with flags over the environment over
// the --config file. A flag or variable naming one registry replaces the
// other registry named by a weaker source; naming both at one level is a
// usage error.
func regcenterConfig(o *options, set map[string]bool, getenv func(string) string) (regcenter.Config, error) {
	var cfg regcenter.Config
	if err := conflictingFlags(o, set); err != nil {
		return cfg, err
	}
	if o.config != "" {
		// LoadFile applies the SHARDJOB_REGCENTER_* variables itself; a
		// run file's tracing section is read (and checked) too, though
		// only shardjob run uses it.
		f, err := jobfile.LoadFile(o.config)
		if err != nil {
			return cfg, usagef("--config: %s", oneLine(err.Error()))
		}
		cfg = f.Regcenter
	} else if err := applyEnv(&cfg, getenv); err != nil {
		return cfg, err
	}
	if set["zk"] {
		cfg.Servers, cfg.Etcd, cfg.EmbeddedDir, cfg.URL = splitList(o.zk), nil, "", ""
	}
	if set["etcd"] {
		cfg.Servers, cfg.Etcd, cfg.EmbeddedDir, cfg.URL = nil, splitList(o.etcd), "", ""
	}
	if set["embedded"] {
		// The member's Dir holds its endpoint and its credentials: a
		// digest from a weaker source is not for it.
		cfg.Servers, cfg.Etcd, cfg.EmbeddedDir, cfg.URL = nil, nil, o.embedded, ""
		cfg.Digest, cfg.DigestFile = "", ""
	}
	if set["pg"] {
		cfg.Servers, cfg.Etcd, cfg.EmbeddedDir, cfg.URL = nil, nil, "", strings.TrimSpace(o.pg)
	}
	if set["namespace"] {
		cfg.Namespace = o.namespace
	}
	// A digest flag replaces a digest from the environment or the file,
	// whichever way that one was given.
	if set["digest"] {
		cfg.Digest, cfg.DigestFile = o.digest, ""
	}
	if set["digest-file"] {
		cfg.Digest, cfg.DigestFile = "", o.digestFile
	}
	if set["tls"] {
		cfg.TLS = o.tls
	}
	if set["tls-ca"] {
		cfg.TLSCAFile = o.tlsCA
	}
	if set["tls-cert"] {
		cfg.TLSCertFile = o.tlsCert
	}
	if set["tls-key"] {
		cfg.TLSKeyFile = o.tlsKey
	}
	if set["tls-server-name"] {
		cfg.TLSServerName = o.tlsServerName
	}
	if set["timeout"] || cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = o.timeout
	}
	if len(cfg.Servers) == 0 && len(cfg.Etcd) == 0 && cfg.EmbeddedDir == "" && cfg.URL == "" {
		return cfg, usagef("no registry given: use --zk host:port[,host:port...] (ZooKeeper), --etcd host:port[,host:port...] (etcd), --embedded DIR (an embedded member on this host) or --pg postgres://user@host:port/db (PostgreSQL), set %s_REGCENTER_SERVERS, %s_REGCENTER_ETCD, %s_REGCENTER_EMBEDDEDDIR or %s_REGCENTER_PG (or %s_REGCENTER_URL), or --config FILE with a regcenter: section", jobfile.EnvPrefix, jobfile.EnvPrefix, jobfile.EnvPrefix, jobfile.EnvPrefix, jobfile.EnvPrefix)
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, usagef("%s", strings.TrimPrefix(err.Error(), "regcenter: "))
	}
	return cfg, nil
}

// conflictingFlags refuses two flags that say opposite things about one
// setting: neither may silently win.
func conflictingFlags(o *options, set map[string]bool) error {
	if set["zk"] && set["etcd"] {
		return usagef("--zk (ZooKeeper) and --etcd (etcd) both name the registry: use one, not both")
	}
	for _, f := range []string{"zk", "etcd"} {
		if set["embedded"] && set[f] {
			return usagef("--%s and --embedded both name the registry: use one, not both", f)
		}
	}
	for _, f := range []string{"zk", "etcd", "embedded"} {
		if set["pg"] && set[f] {
			return usagef("--%s and --pg both name the registry: use one, not both", f)
		}
	}
	if set["pg"] {
		if err := noPasswordInURL("--pg", o.pg); err != nil {
			return err
		}
	}
	if set["embedded"] && (set["digest"] || set["digest-file"]) {
		return usagef("--embedded reads the member's credentials from its directory: drop --digest and --digest-file")
	}
	if set["digest"] && set["digest-file"] {
		return usagef("--digest and --digest-file both give the digest: use one, not both (prefer --digest-file)")
	}
	if set["tls"] && !o.tls {
		for _, f := range []string{"tls-ca", "tls-cert", "tls-key", "tls-server-name"} {
			if set[f] {
				return usagef("--tls=false contradicts --%s, which turns TLS on: drop one of them", f)
			}
		}
	}
	return nil
}

// applyEnv reads the SHARDJOB_REGCENTER_* variables (empty ones are
// ignored), as jobfile.LoadFile does for a file.
func applyEnv(cfg *regcenter.Config, getenv func(string) string) error {
	prefix := jobfile.EnvPrefix + "_REGCENTER_"
	if strings.TrimSpace(getenv(prefix+"SERVERS")) != "" && strings.TrimSpace(getenv(prefix+"ETCD")) != "" {
		return usagef("%sSERVERS (ZooKeeper) and %sETCD (etcd) are both set: set one, not both", prefix, prefix)
	}
	if strings.TrimSpace(getenv(prefix+"EMBEDDEDDIR")) != "" {
		for _, other := range []string{"SERVERS", "ETCD"} {
			if strings.TrimSpace(getenv(prefix+other)) != "" {
				return usagef("%s%s and %sEMBEDDEDDIR are both set: set one, not both", prefix, other, prefix)
			}
		}
	}
	for _, pg := range []string{"URL", "PG"} {
		if strings.TrimSpace(getenv(prefix+pg)) == "" {
			continue
		}
		for _, other := range []string{"SERVERS", "ETCD", "EMBEDDEDDIR", "URL"} {
			if other != pg && strings.TrimSpace(getenv(prefix+other)) != "" {
				return usagef("%s%s and %s%s are both set: set one, not both", prefix, other, prefix, pg)
			}
		}
	}
	if getenv(prefix+"DIGEST") != "" && getenv(prefix+"DIGESTFILE") != "" {
		return usagef("%sDIGEST and %sDIGESTFILE are both set: set one, not both", prefix, prefix)
	}
	dur := func(key string, dst *time.Duration) error {
		v := strings.TrimSpace(getenv(prefix + key))
		if v == "" {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return usagef("%s%s=%q is not a duration such as \"10s\"", prefix, key, v)
		}
		*dst = d
		return nil
	}
	if v := getenv(prefix + "SERVERS"); strings.TrimSpace(v) != "" {
		cfg.Servers = splitList(v)
	}
	if v := getenv(prefix + "ETCD"); strings.TrimSpace(v) != "" {
		cfg.Etcd = splitList(v)
	}
	if v := strings.TrimSpace(getenv(prefix + "EMBEDDEDDIR")); v != "" {
		cfg.EmbeddedDir = v
	}
	for _, pg := range []string{"URL", "PG"} {
		if v := strings.TrimSpace(getenv(prefix + pg)); v != "" {
			cfg.URL = v
		}
	}
	if v := getenv(prefix + "NAMESPACE"); v != "" {
		cfg.Namespace = v
	}
	for key, dst := range map[string]*string{
		"DIGEST": &cfg.Digest, "DIGESTFILE": &cfg.DigestFile, "TLSCAFILE": &cfg.TLSCAFile,
		"TLSCERTFILE": &cfg.TLSCertFile, "TLSKEYFILE": &cfg.TLSKeyFile, "TLSSERVERNAME": &cfg.TLSServerName,
	} {
		if v := getenv(prefix + key); v != "" {
			*dst = v
		}
	}
	for key, dst := range map[string]*bool{"TLS": &cfg.TLS, "TLSINSECURESKIPVERIFY": &cfg.TLSInsecureSkipVerify} {
		if v := strings.TrimSpace(getenv(prefix + key)); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return usagef("%s%s=%q is not true or false", prefix, key, v)
			}
			*dst = b
		}
	}
	if v := strings.TrimSpace(getenv(prefix + "MAXRETRIES")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return usagef("%sMAXRETRIES=%q is not an integer", prefix, v)
		}
		cfg.MaxRetries = n
	}
	for key, dst := range map[string]*time.Duration{
		"SESSIONTIMEOUT": &cfg.SessionTimeout, "CONNECTTIMEOUT": &cfg.ConnectTimeout,
		"BASESLEEP": &cfg.BaseSleep, "MAXSLEEP": &cfg.MaxSleep,
	} {
		if err := dur(key, dst); err != nil {
			return err
		}
	}
	return nil
}

// noPasswordInURL refuses a registry URL given on the command line with a
// password in it: the command line shows in process lists and shell
// histories. The message never repeats the password.
func noPasswordInURL(flagName, raw string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil // Validate names what is wrong with it
	}
	if _, has := u.User.Password(); has {
		return usagef("%s %s: a password on the command line shows in process lists and shell histories; drop it from the URL and give it with PGPASSWORD, a passfile (PGPASSFILE, ~/.pgpass) or --digest-file FILE (user:password)", flagName, u.Redacted())
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// codec decodes a config node as the instances do, with the codec the
// HTTP handler uses too. The sharding strategy is not looked up:
// strategies registered by an application are unknown to this command
// (instances refuse an unknown one and keep their config).
var codec = admin.JobCodec(false)

// fileError names the file a refused config document came from.
func fileError(file string, err error) error {
	return fmt.Errorf("%s: %w", file, err)
}
