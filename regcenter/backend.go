package regcenter

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// What a Center implemented in another package needs from this one. Every
// backend is a package of its own (regcenter/zookeeper, regcenter/etcd,
// regcenter/postgres), linked only by the programs that import it, so that
// this package links no registry's client:
//
//   - a registry of backends, through which [Open] reaches the one a
//     [Config] names: by a field of its own ([RegisterBackend]: Servers for
//     ZooKeeper, Etcd or EmbeddedDir for etcd) or by the scheme of
//     [Config.URL] ([RegisterOpener]);
//   - the options an [Option] carries ([ResolveOptions]);
//   - the session bookkeeping every center shares ([SessionKeeper]):
//     the current [Session], its fencing lease on the monotonic clock, and
//     the SessionSuspended, SessionReconnected, SessionLost and SessionNew
//     events delivered in order.

// Opener connects to the registry a [Config] names, for [Open]. cfg has
// passed [Config.Validate].
type Opener func(ctx context.Context, cfg Config, opts ...Option) (Center, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]Opener{} // by URL scheme
	backends  = map[string]Opener{} // by the backend a field of Config names
)

// fieldBackends are the backends a [Config] names by a field of its own,
// and the package that serves each.
var fieldBackends = map[string]string{
	BackendZooKeeper: "regcenter/zookeeper",
	BackendEtcd:      "regcenter/etcd",
}

// RegisterBackend makes [Open] use fn for the configs whose fields name
// backend: [BackendZooKeeper] for Config.Servers, [BackendEtcd] for
// Config.Etcd and Config.EmbeddedDir. Packages regcenter/zookeeper and
// regcenter/etcd call it from their init, so that importing one, for its
// side effect if the program opens registries only through Open, links
// that registry. Registering a backend twice, a nil fn, or a backend that
// no field of Config names panics.
func RegisterBackend(backend string, fn Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, ok := fieldBackends[backend]; !ok {
		panic("regcenter: RegisterBackend of " + backend + ", which no field of Config names (a URL scheme is registered with RegisterOpener)")
	}
	if fn == nil {
		panic("regcenter: RegisterBackend of a nil opener for " + backend)
	}
	if _, dup := backends[backend]; dup {
		panic("regcenter: RegisterBackend called twice for " + backend)
	}
	backends[backend] = fn
}

// Open connects to the registry cfg names, through the backend package
// linked into the program for it: ZooKeeper when cfg.Servers is set
// (package regcenter/zookeeper), etcd when cfg.Etcd or cfg.EmbeddedDir is
// (package regcenter/etcd), and the backend registered for the scheme of
// cfg.URL when that is set ([RegisterOpener]; postgres:// is package
// regcenter/postgres). A program imports the packages of the registries
// it offers, for their side effect if it only calls Open:
//
//	import _ "github.com/shardjob/shardjob/regcenter/zookeeper"
//
// A config that names a registry whose package is not linked fails with
// [ErrInvalidConfig] naming the import to add.
func Open(ctx context.Context, cfg Config, opts ...Option) (Center, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	fn, err := cfg.opener()
	if err != nil {
		return nil, err
	}
	return fn(ctx, cfg, opts...)
}

// opener returns the opener of the registry c names; c is valid.
func (c Config) opener() (Opener, error) {
	if c.URL != "" {
		u, _ := url.Parse(c.URL)  // Validate parsed it
		fn, _ := opener(u.Scheme) // and found it
		return fn, nil
	}
	backend, field, what := BackendZooKeeper, "servers", "a ZooKeeper ensemble"
	switch {
	case len(c.Etcd) > 0:
		backend, field, what = BackendEtcd, "etcd", "an etcd cluster"
	case c.EmbeddedDir != "":
		backend, field, what = BackendEtcd, "embeddedDir", "an embedded etcd member"
	}
	openersMu.RLock()
	fn, ok := backends[backend]
	openersMu.RUnlock()
	if !ok {
		pkg := fieldBackends[backend]
		return nil, fmt.Errorf("%w: %s names %s, but package %s is not linked into this program: import _ \"github.com/shardjob/shardjob/%s\"",
			ErrInvalidConfig, field, what, pkg, pkg)
	}
	return fn, nil
}

// RegisterOpener makes [Open] use fn for a [Config.URL] whose scheme is
// scheme (case-insensitive, e.g. "postgres"). A backend package calls it
// from its init, so that importing the package for its side effect
// (import _ ".../regcenter/postgres") is enough. Registering a scheme
// twice, or a nil fn, panics.
func RegisterOpener(scheme string, fn Opener) {
	scheme = strings.ToLower(scheme)
	openersMu.Lock()
	defer openersMu.Unlock()
	if fn == nil {
		panic("regcenter: RegisterOpener of a nil opener for " + scheme)
	}
	if _, dup := openers[scheme]; dup {
		panic("regcenter: RegisterOpener called twice for scheme " + scheme)
	}
	openers[scheme] = fn
}

// opener returns the opener registered for scheme, if any.
func opener(scheme string) (Opener, bool) {
	openersMu.RLock()
	defer openersMu.RUnlock()
	fn, ok := openers[strings.ToLower(scheme)]
	return fn, ok
}

// registeredSchemes lists the schemes with an opener, sorted.
func registeredSchemes() []string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	out := make([]string, 0, len(openers))
	for s := range openers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// validateURL checks c.URL: a URL whose scheme has an opener, and which
// carries no password (a URL shows in process lists, logs and config
// dumps; the password belongs in DigestFile or the backend's own
// environment).
func (c Config) validateURL() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	if len(c.Servers) > 0 || len(c.Etcd) > 0 || c.EmbeddedDir != "" {
		return bad("url and servers, etcd or embeddedDir are set together; use one")
	}
	u, err := url.Parse(c.URL)
	if err != nil || u.Scheme == "" {
		return bad("url: %s is not a URL with a scheme (e.g. postgres://user@host:5432/db)", redactURL(c.URL))
	}
	if _, ok := opener(u.Scheme); !ok {
		known := strings.Join(registeredSchemes(), ", ")
		if known == "" {
			known = "none"
		}
		hint := ""
		if s := strings.ToLower(u.Scheme); s == "postgres" || s == "postgresql" {
			hint = `; import _ "github.com/shardjob/shardjob/regcenter/postgres" into the program to link the PostgreSQL registry`
		}
		return bad("url: no registry for scheme %q is linked into this program (linked: %s)%s", u.Scheme, known, hint)
	}
	if _, has := u.User.Password(); has {
		return bad("url: %s carries a password; put it in digestFile (user:password) or the backend's environment (PGPASSFILE, PGPASSWORD), not in the URL", redactURL(c.URL))
	}
	return nil
}

// redactURL returns u with any password replaced, for messages.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable url)"
	}
	return p.Redacted()
}

// LeaseClock is what a [SessionKeeper] asks its center about the fencing
// lease of the current session, on the monotonic clock.
type LeaseClock interface {
	// LeaseLeft is how long the lease still proves the session live:
	// LeaseDuration less SinceRead; at or below zero it has lapsed.
	LeaseLeft() time.Duration
	// SinceRead is how long since the send time of the latest request the
	// server answered on the session's behalf (a heartbeat).
	SinceRead() time.Duration
	// LeaseDuration is how long after that send time the lease holds:
	// less than the server's own timeout, so that the holder stops
	// before anyone else can take over.
	LeaseDuration() time.Duration
	// Backend names the registry for messages ("PostgreSQL").
	Backend() string
}

// SessionChange is what [SessionKeeper.Established] did.
type SessionChange int

// Session changes.
const (
	// SessionKept: the center is closed, or the current session goes on
	// (reconnected if it was suspended).
	SessionKept SessionChange = SessionChange(sessionKept)
	// SessionFirst: the center's first session started.
	SessionFirst SessionChange = SessionChange(sessionFirst)
	// SessionNext: a new session replaced an earlier one; the center's
	// watches must resynchronise.
	SessionNext SessionChange = SessionChange(sessionNext)
)

// SessionKeeper keeps the sessions of a center implemented in another
// package exactly as this package's centers keep theirs: it makes the
// [Session] values (whose Check consults the center's [LeaseClock]), ends
// them, and delivers [SessionEvent]s to the center's OnSession listeners
// in order, on the goroutine that runs [SessionKeeper.Run].
type SessionKeeper struct{ h *sessionHub }

// NewSessionKeeper returns a keeper for a center on backend (a Stats
// backend name such as BackendPostgres) whose lease clock is clock.
func NewSessionKeeper(log *slog.Logger, backend string, clock LeaseClock) *SessionKeeper {
	if log == nil {
		log = slog.Default()
	}
	return &SessionKeeper{h: newSessionHub(log, backend, clock)}
}

// Established records that the server holds a live session with id: the
// first session starts; a live current session with that id goes on (and
// is reconnected if it was suspended); otherwise a new session starts and
// a live current one is lost, replaced by it. Nothing changes once the
// keeper is closed.
func (k *SessionKeeper) Established(id int64) SessionChange {
	return SessionChange(k.h.established(id))
}

// Current returns the current session: nil only before the first.
func (k *SessionKeeper) Current() *Session { return k.h.current() }

// Suspend marks the live current session suspended (once), logging msg
// with attrs: the connection failed, the session may still be alive.
func (k *SessionKeeper) Suspend(msg string, attrs ...any) { k.h.suspend(msg, attrs...) }

// Lose ends the current session with cause (which should wrap
// [ErrSessionLost]), if it is live.
func (k *SessionKeeper) Lose(cause error) { k.h.lose(cause) }

// Lapse ends s if it is the current, live session and the lease clock
// says its lease ran out; what names the silence ("no heartbeat answered").
func (k *SessionKeeper) Lapse(s *Session, what string) { k.h.lapse(s, what) }

// Revive starts a new session on s's id when s is still the current
// session and the keeper is not closed: s ended because its lease lapsed
// here, and a round trip has since proved that the server still holds the
// session. It reports whether it did; the new session is announced as
// SessionNew, since whatever s owned was stopped when it ended.
func (k *SessionKeeper) Revive(s *Session) bool { return k.h.revive(s) }

// Close marks the keeper closed and ends the current session with
// [ErrClosed]. It returns that session and false when already closed.
func (k *SessionKeeper) Close() (*Session, bool) { return k.h.close() }

// Closing reports whether Close was called.
func (k *SessionKeeper) Closing() bool { return k.h.closing() }

// Subscribe registers fn for session events (Center.OnSession).
func (k *SessionKeeper) Subscribe(fn func(SessionEvent)) (cancel func()) { return k.h.subscribe(fn) }

// Wakeups receives when the lease should be looked at again (a session
// started); a center's watchdog selects on it.
func (k *SessionKeeper) Wakeups() <-chan struct{} { return k.h.wakeups() }

// Wake sends on Wakeups, without blocking.
func (k *SessionKeeper) Wake() { k.h.wake() }

// WatchLease ends the current session when its lease lapses on the
// keeper's clock (Lapse, naming the silence what), whether or not a
// renewal is still outstanding; leaseLeft says how long the lease has
// left. It looks again when the lease would run out, at least every
// second while no session is live, and at every Wakeups, until ctx ends.
// The center runs it on a goroutine of its own.
func (k *SessionKeeper) WatchLease(ctx context.Context, leaseLeft func() time.Duration, what string) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s := k.Current()
		wait := time.Second
		if s.Err() == nil {
			if left := leaseLeft(); left <= 0 {
				k.Lapse(s, what)
			} else {
				wait = left
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-k.Wakeups():
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		}
	}
}

// Run delivers session events to the subscribers until ctx ends. The
// center runs it on a goroutine of its own.
func (k *SessionKeeper) Run(ctx context.Context) { k.h.notifyLoop(ctx) }
