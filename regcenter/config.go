package regcenter

import (
	"fmt"
	"strings"
	"time"
)

// Config describes how to reach the registry: a ZooKeeper ensemble
// (Servers), an etcd cluster (Etcd) or a registry named by URL (such as
// PostgreSQL, see [RegisterOpener]). The zero value is not usable: one of
// Servers, Etcd, EmbeddedDir and URL must be set. Every other field has a default, stated per field,
// that [Config.WithDefaults] fills in and [Config.Validate] checks.
type Config struct {
	// Servers lists the ZooKeeper members as host:port, for a center on
	// ZooKeeper (package regcenter/zookeeper, which [Open] needs linked).
	// Set Servers or Etcd, not both.
	Servers []string `yaml:"servers" json:"servers"`
	// Etcd lists the etcd cluster's client endpoints as host:port, for a
	// center on etcd (package regcenter/etcd, which [Open] needs linked).
	// Set Servers or Etcd, not both.
	// On etcd, Digest and DigestFile hold etcd's user:password and the TLS
	// fields apply to the client endpoints; SessionTimeout is the lease's
	// TTL, rounded up to whole seconds.
	Etcd []string `yaml:"etcd" json:"etcd"`
	// EmbeddedDir names the Dir of an embedded etcd member (package
	// regcenter/embedded) running on this host, for a center on it from
	// another process: the member's endpoint and its credentials are read
	// from files in that directory when connecting, so only a user who
	// may read them (the member's owner, and root) can connect. The
	// endpoint file is read again at every reconnection, so the center
	// follows the member when another process of the host takes it over
	// (package embedded's Join). Set one of
	// Servers, Etcd and EmbeddedDir; Digest and DigestFile stay empty
	// (the credentials come from the directory). Default empty.
	EmbeddedDir string `yaml:"embeddedDir" json:"embeddedDir"`
	// URL names a registry reached through a backend package linked into
	// the program, by its scheme: "postgres://user@host:5432/db" needs
	// import _ "github.com/shardjob/shardjob/regcenter/postgres" (see
	// [RegisterOpener]). [Config.Validate] says so clearly when no package
	// for the scheme is linked. The URL must not carry a password: put it
	// in DigestFile ("user:password") or the backend's environment. Set
	// one of Servers, Etcd, EmbeddedDir and URL. Default empty.
	URL string `yaml:"url" json:"url"`
	// Namespace is the root node under which every job lives, without
	// slashes, e.g. "shop". Default "shardjob".
	Namespace string `yaml:"namespace" json:"namespace"`
	// SessionTimeout is the session timeout asked of ZooKeeper; the server
	// may negotiate it into its [minSessionTimeout, maxSessionTimeout].
	// Default 10s.
	SessionTimeout time.Duration `yaml:"sessionTimeout" json:"sessionTimeout"`
	// ConnectTimeout bounds how long a constructor waits for the first
	// session. Default 5s.
	ConnectTimeout time.Duration `yaml:"connectTimeout" json:"connectTimeout"`
	// BaseSleep is the first backoff between retries of a request that
	// failed because the connection was lost. Default 50ms.
	BaseSleep time.Duration `yaml:"baseSleep" json:"baseSleep"`
	// MaxSleep caps the backoff between retries. Default 1s, or less so
	// that MaxRetries*MaxSleep stays within half the session timeout.
	MaxSleep time.Duration `yaml:"maxSleep" json:"maxSleep"`
	// MaxRetries is how many times a request is retried after a connection
	// loss before the error is returned. Default 3. A context deadline
	// ends the retries earlier.
	MaxRetries int `yaml:"maxRetries" json:"maxRetries"`
	// MaxNodeBytes is the largest write sent to ZooKeeper: the data of a
	// Create or Set, or the data, paths and headers of a Multi's operations
	// together. Larger writes are refused with [ErrTooLarge] before they
	// are sent. It must stay below the servers' jute.maxbuffer less room
	// for the request header. 0 means [DefaultMaxNodeBytes] (1 MiB less
	// 4 KiB, for the default jute.maxbuffer); at most [MaxMaxNodeBytes].
	MaxNodeBytes int `yaml:"maxNodeBytes" json:"maxNodeBytes"`
	// Digest is "user:password" for ZooKeeper digest authentication. When
	// set, every node shardjob creates carries an ACL that grants all
	// rights to this identity only. Default empty: open ACLs. On etcd it
	// is the etcd user and password the client authenticates as (etcd's
	// own authentication; the user's role decides what it may touch). Prefer
	// DigestFile, or the environment, to writing the password where
	// others can read it (a command line shows in ps).
	Digest string `yaml:"digest" json:"digest"`
	// DigestFile names a file holding the digest ("user:password"), read
	// when the center connects; one trailing newline is trimmed. A
	// missing, unreadable, empty or malformed file fails the connect with
	// [ErrInvalidConfig] naming the file, never its contents. Default
	// empty. Set Digest or DigestFile, not both.
	DigestFile string `yaml:"digestFile" json:"digestFile"`

	// TLS turns on TLS to ZooKeeper (its secureClientPort, ZooKeeper 3.5
	// or newer). It is implied by any TLS file or TLSServerName below.
	// Default false: plain TCP. Without TLSCAFile the system's roots
	// verify the server.
	TLS bool `yaml:"tls" json:"tls"`
	// TLSCAFile names a PEM file of the CA certificates that verify the
	// servers' certificates. Default empty: the system's roots.
	TLSCAFile string `yaml:"tlsCAFile" json:"tlsCAFile"`
	// TLSCertFile and TLSKeyFile name the PEM client certificate and its
	// private key, for servers that need one (ssl.clientAuth=need). Set
	// both or neither. Default empty: no client certificate.
	TLSCertFile string `yaml:"tlsCertFile" json:"tlsCertFile"`
	TLSKeyFile  string `yaml:"tlsKeyFile" json:"tlsKeyFile"`
	// TLSServerName is the name the servers' certificates must be valid
	// for. Default empty: the host of each address in Servers.
	TLSServerName string `yaml:"tlsServerName" json:"tlsServerName"`
	// TLSInsecureSkipVerify accepts any server certificate. For trials
	// only: anyone on the path can read and change the traffic. Default
	// false.
	TLSInsecureSkipVerify bool `yaml:"tlsInsecureSkipVerify" json:"tlsInsecureSkipVerify"`
}

// Defaults used by [Config.WithDefaults].
const (
	DefaultNamespace      = "shardjob"
	DefaultSessionTimeout = 10 * time.Second
	DefaultConnectTimeout = 5 * time.Second
	DefaultBaseSleep      = 50 * time.Millisecond
	DefaultMaxSleep       = time.Second
	DefaultMaxRetries     = 3
)

// WithDefaults returns a copy of c with every unset field given its default.
func (c Config) WithDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.MaxSleep == 0 {
		// Keep the whole retry budget within half a session.
		c.MaxSleep = min(DefaultMaxSleep, c.SessionTimeout/time.Duration(2*max(c.MaxRetries, 1)))
	}
	if c.BaseSleep == 0 {
		c.BaseSleep = min(DefaultBaseSleep, c.MaxSleep)
	}
	return c
}

// Validate reports the first thing wrong with c (after defaults are
// applied), wrapping [ErrInvalidConfig].
func (c Config) Validate() error {
	c = c.WithDefaults()
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	var named []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"servers (ZooKeeper)", len(c.Servers) > 0}, {"etcd", len(c.Etcd) > 0}, {"embeddedDir (an embedded etcd member)", c.EmbeddedDir != ""}, {"url", c.URL != ""}} {
		if f.set {
			named = append(named, f.name)
		}
	}
	switch {
	case len(named) == 0:
		return bad("servers: at least one host:port is required (or etcd: the etcd endpoints, embeddedDir: an embedded member's directory, or url: a registry by URL such as postgres://)")
	case len(named) == 2:
		return bad("%s and %s are both set; use one", named[0], named[1])
	case len(named) > 2:
		return bad("%s are all set; use one registry", strings.Join(named, ", "))
	case c.URL != "":
		if err := c.validateURL(); err != nil {
			return err
		}
	case c.EmbeddedDir != "" && (c.Digest != "" || c.DigestFile != ""):
		return bad("embeddedDir reads the member's credentials from the directory; leave digest and digestFile empty")
	}
	field, list := "servers", c.Servers
	if len(c.Etcd) > 0 {
		field, list = "etcd", c.Etcd
	}
	for _, s := range list {
		host, port, ok := strings.Cut(strings.TrimSpace(s), ":")
		if !ok || host == "" || port == "" || strings.ContainsAny(port, ":/ ") {
			return bad("%s: %q is not host:port", field, s)
		}
	}
	if strings.ContainsAny(c.Namespace, "/ \t\n") || c.Namespace == "." || c.Namespace == ".." || c.Namespace == "zookeeper" {
		return bad("namespace: %q must be one path segment without slashes or spaces", c.Namespace)
	}
	if c.SessionTimeout < 0 || c.ConnectTimeout < 0 || c.BaseSleep < 0 || c.MaxSleep < 0 {
		return bad("timeouts must not be negative")
	}
	if c.SessionTimeout < 500*time.Millisecond {
		return bad("sessionTimeout: %v is below 500ms", c.SessionTimeout)
	}
	if c.MaxRetries < 0 {
		return bad("maxRetries: %d must not be negative", c.MaxRetries)
	}
	if c.MaxNodeBytes < 0 || c.MaxNodeBytes > MaxMaxNodeBytes {
		return bad("maxNodeBytes: %d must be between 0 (the default) and %d", c.MaxNodeBytes, MaxMaxNodeBytes)
	}
	if c.BaseSleep > c.MaxSleep {
		return bad("baseSleep %v exceeds maxSleep %v", c.BaseSleep, c.MaxSleep)
	}
	// The retry budget must fit inside the session: retrying longer than the
	// session lives would keep acting on a lease that may already be gone.
	if budget := time.Duration(c.MaxRetries) * c.MaxSleep; budget >= c.SessionTimeout {
		return bad("retry budget maxRetries*maxSleep = %v must be shorter than sessionTimeout %v", budget, c.SessionTimeout)
	}
	if c.Digest != "" {
		user, pass, ok := strings.Cut(c.Digest, ":")
		if !ok || user == "" || pass == "" {
			return bad("digest: must be user:password")
		}
	}
	return c.validateSecurity()
}
