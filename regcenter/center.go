package regcenter

import (
	"context"
	"time"
)

// Center is the registry center the rest of shardjob stands on: a
// namespaced tree of nodes with ephemeral ownership, atomic multi-node
// transactions, change notifications and a session whose loss is signalled.
// Paths are absolute within the namespace ("/orders-sync/config"); the
// implementation adds the namespace root.
//
// Every blocking method takes a context and returns when it is done; errors
// wrap this package's sentinels (ErrNoNode, ErrNodeExists, ErrBadVersion,
// ErrNotEmpty, ErrSessionLost, ErrClosed, ErrUnauthorized) or a connection
// error. Create, Set and Multi refuse a payload larger than the center's
// limit (Config.MaxNodeBytes) with ErrTooLarge, sending nothing.
type Center interface {
	// Get returns a node's data and stat.
	Get(ctx context.Context, path string) ([]byte, Stat, error)
	// Exists reports whether a node exists, with its stat when it does.
	Exists(ctx context.Context, path string) (bool, Stat, error)
	// GetMany reads the data and stat of every node of paths, in as few
	// requests as the registry allows: on ZooKeeper one multiRead (3.6
	// and newer; an older server answers one Get per path), on etcd one
	// read transaction, on PostgreSQL one statement, each for as many
	// paths as one request may carry. nodes[i] is paths[i]'s; a node that
	// does not exist is not an error (its Exists is false). On ZooKeeper
	// the nodes are not read at one instant: each is as it was at some
	// moment of the call. The answer holds every node's data: a caller
	// that reads large nodes asks for few at a time.
	GetMany(ctx context.Context, paths ...string) ([]NodeData, error)
	// Children lists a node's children, unsorted.
	Children(ctx context.Context, path string) ([]string, error)
	// Create creates a node, and any missing parents as persistent nodes,
	// returning the created path (which differs from path for sequential
	// modes).
	Create(ctx context.Context, path string, data []byte, mode Mode) (string, error)
	// EnsurePath creates path and its parents as empty persistent nodes
	// where missing.
	EnsurePath(ctx context.Context, path string) error
	// Set writes a node's data if its version matches (-1: any version).
	Set(ctx context.Context, path string, data []byte, version int32) (Stat, error)
	// Delete removes a node if its version matches (-1: any version).
	Delete(ctx context.Context, path string, version int32) error
	// DeleteTree removes a node and everything below it. A missing node is
	// not an error.
	DeleteTree(ctx context.Context, path string) error
	// Multi applies ops atomically: all of them or none. When one fails the
	// error is a *MultiError naming it.
	Multi(ctx context.Context, ops ...Op) error
	// Watch calls fn whenever the node at path changes (WatchNode: created,
	// deleted or its data set) or its children change (WatchChildren). The
	// watch persists across notifications, reconnects and new sessions: after
	// a new session fn is called once, since anything may have changed
	// meanwhile. fn runs on a single dispatch goroutine and must not block.
	Watch(path string, kind WatchKind, fn func(Event)) (cancel func())
	// WatchNow registers a watch as Watch does, but arms it at once, in the
	// caller's goroutine within ctx, and returns what the arming request
	// read. fn is not called with EventResync for it: the caller has the
	// state, and every change after that read reaches fn. When the watch
	// cannot be armed here (an error, or the session changed meanwhile),
	// WatchNow returns the error with the watch still registered; it is
	// then armed as Watch arms it, and fn gets EventResync once it is.
	// Registering thousands of watches this way costs one round trip each,
	// made concurrently by the callers, instead of a queue drained one
	// request at a time.
	WatchNow(ctx context.Context, path string, kind WatchKind, fn func(Event)) (WatchState, func(), error)
	// Session returns the current session. It is never nil after a
	// successful constructor.
	Session() *Session
	// OnSession registers fn for session state changes. fn must not block.
	OnSession(fn func(SessionEvent)) (cancel func())
	// Stats returns the requests sent to the server so far.
	Stats() Stats
	// Close ends the session (its ephemeral nodes are removed at once) and
	// stops every goroutine the center started.
	Close() error
}

// Mode is how a node is created.
type Mode int

// Creation modes.
const (
	// Persistent nodes live until deleted.
	Persistent Mode = iota
	// Ephemeral nodes are removed when the session that created them ends.
	Ephemeral
	// EphemeralSequential nodes are ephemeral with a monotonically
	// increasing 10-digit suffix appended to the name.
	EphemeralSequential
	// PersistentSequential nodes are persistent with a sequence suffix.
	PersistentSequential
)

// Stat is the metadata the registry keeps for a node, in ZooKeeper's
// terms.
type Stat struct {
	// Version counts changes to the node's data.
	Version int32
	// CVersion counts changes to the node's children.
	CVersion int32
	// EphemeralOwner is the session id owning an ephemeral node, else 0.
	EphemeralOwner int64
	// Czxid and Mzxid are the transaction ids that created and last modified
	// the node.
	Czxid, Mzxid int64
	// Ctime and Mtime are the server's clock when the node was created and
	// last modified.
	Ctime, Mtime time.Time
	// NumChildren is the number of children.
	NumChildren int32
	// DataLength is the size of the node's data.
	DataLength int32
}

// NodeData is one node as [Center.GetMany] read it.
type NodeData struct {
	// Exists reports whether the node existed; Data and Stat are its
	// when it did.
	Exists bool
	Data   []byte
	Stat   Stat
}

// WatchKind selects what a watch observes.
type WatchKind int

// Watch kinds.
const (
	// WatchNode observes a node's creation, deletion and data changes.
	WatchNode WatchKind = iota
	// WatchChildren observes changes to a node's list of children (and its
	// deletion or creation).
	WatchChildren
)

// WatchState is what arming a watch read (see Center.WatchNow).
type WatchState struct {
	// Exists reports whether the node existed.
	Exists bool
	// Stat is the node's stat when it existed and the watch is a WatchNode.
	Stat Stat
	// Children are the node's children, for a WatchChildren on a node that
	// existed.
	Children []string
}

// EventType says what happened to a watched node.
type EventType int

// Event types.
const (
	// EventCreated: the node was created.
	EventCreated EventType = iota + 1
	// EventDeleted: the node was deleted.
	EventDeleted
	// EventDataChanged: the node's data was set.
	EventDataChanged
	// EventChildrenChanged: a child was added or removed.
	EventChildrenChanged
	// EventResync: the watch was re-established after a new session (or a
	// failure to re-arm it); anything may have changed, so re-read.
	EventResync
)

// String names the event type.
func (t EventType) String() string {
	switch t {
	case EventCreated:
		return "created"
	case EventDeleted:
		return "deleted"
	case EventDataChanged:
		return "data-changed"
	case EventChildrenChanged:
		return "children-changed"
	case EventResync:
		return "resync"
	}
	return "unknown"
}

// Event is a change notification for a watched path (relative to the
// namespace).
type Event struct {
	Type EventType
	Path string
}

// SessionEventType is a change in the session's state.
type SessionEventType int

// Session event types.
const (
	// SessionSuspended: the connection was lost; the session may still be
	// alive on the server. Stop starting new work.
	SessionSuspended SessionEventType = iota + 1
	// SessionReconnected: the connection came back within the same session
	// and lease; resume.
	SessionReconnected
	// SessionLost: the session expired, or its lease lapsed so it can no
	// longer be proven live. Everything owned by it must stop; its
	// Session.Ctx is already cancelled.
	SessionLost
	// SessionNew: a new session is established after a loss. Ephemeral
	// state must be re-created.
	SessionNew
)

// String names the session event type.
func (t SessionEventType) String() string {
	switch t {
	case SessionSuspended:
		return "suspended"
	case SessionReconnected:
		return "reconnected"
	case SessionLost:
		return "lost"
	case SessionNew:
		return "new-session"
	}
	return "unknown"
}

// SessionEvent reports a session state change. Session is the session the
// event concerns: the lost one for SessionLost, the new one for SessionNew.
type SessionEvent struct {
	Type    SessionEventType
	Session *Session
}

// Stats counts requests sent to the registry, by kind. Every request is one
// round trip (a Multi is one, whatever its size). Errors counts the
// requests that failed for want of an answer (connection loss, a closed
// client, a lost session, a deadline): not the answers that are results
// (no node, node exists, bad version, not empty), which callers expect.
type Stats struct {
	Reads, Writes, Multis, Watches int64
	// WriteOps counts the write operations the requests carried: one per
	// write request, and one per create, set or delete inside a
	// transaction (a check writes nothing). It is not a request count:
	// Total leaves it out.
	WriteOps int64
	Errors   int64
	// Backend names the registry the requests went to: BackendZooKeeper,
	// BackendEtcd or BackendPostgres ("" from a center that does not say).
	Backend string
}

// Backend names, as [Stats.Backend] gives them.
const (
	BackendZooKeeper = "zookeeper"
	BackendEtcd      = "etcd"
	// BackendPostgres is package regcenter/postgres's.
	BackendPostgres = "postgres"
)

// Total is the number of requests of every kind.
func (s Stats) Total() int64 { return s.Reads + s.Writes + s.Multis + s.Watches }

// Sub returns s minus o, for measuring an interval.
func (s Stats) Sub(o Stats) Stats {
	return Stats{Reads: s.Reads - o.Reads, Writes: s.Writes - o.Writes, Multis: s.Multis - o.Multis, Watches: s.Watches - o.Watches,
		WriteOps: s.WriteOps - o.WriteOps, Errors: s.Errors - o.Errors, Backend: s.Backend}
}
