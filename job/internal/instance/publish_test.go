package instance

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/job/internal/process"
	"github.com/shardjob/shardjob/regcenter"
)

// memCenter is the part of a registry Publish uses, in memory: nodes with
// their data, version and ephemeral owner, and a session of id 0. The
// other methods are not there (the embedded nil interface panics).
type memCenter struct {
	regcenter.Center
	mu    sync.Mutex
	nodes map[string]regcenter.Stat
	data  map[string][]byte
	sess  regcenter.Session
}

func newMemCenter() *memCenter {
	return &memCenter{nodes: map[string]regcenter.Stat{}, data: map[string][]byte{}}
}

func (m *memCenter) Session() *regcenter.Session { return &m.sess }

func (m *memCenter) Get(_ context.Context, p string) ([]byte, regcenter.Stat, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.nodes[p]
	if !ok {
		return nil, regcenter.Stat{}, regcenter.ErrNoNode
	}
	return m.data[p], st, nil
}

func (m *memCenter) Create(_ context.Context, p string, data []byte, mode regcenter.Mode) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.nodes[p]; ok {
		return "", regcenter.ErrNodeExists
	}
	st := regcenter.Stat{}
	if mode == regcenter.Ephemeral {
		st.EphemeralOwner = m.sess.ID()
	}
	m.nodes[p], m.data[p] = st, data
	return p, nil
}

func (m *memCenter) Set(_ context.Context, p string, data []byte, version int32) (regcenter.Stat, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.nodes[p]
	if !ok {
		return regcenter.Stat{}, regcenter.ErrNoNode
	}
	if version >= 0 && version != st.Version {
		return regcenter.Stat{}, regcenter.ErrBadVersion
	}
	st.Version++
	m.nodes[p], m.data[p] = st, data
	return st, nil
}

func (m *memCenter) Delete(_ context.Context, p string, version int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.nodes[p]
	if !ok {
		return regcenter.ErrNoNode
	}
	if version >= 0 && version != st.Version {
		return regcenter.ErrBadVersion
	}
	delete(m.nodes, p)
	delete(m.data, p)
	return nil
}

// put leaves a node of owner (0: persistent) naming holder h.
func (m *memCenter) put(t *testing.T, p string, owner int64, h process.Holder) {
	t.Helper()
	data, err := json.Marshal(placement.Instance{FaultTolerance: 1, Holder: placement.Holder(h)})
	if err != nil {
		t.Fatal(err)
	}
	m.nodes[p], m.data[p] = regcenter.Stat{EphemeralOwner: owner, Version: 3}, data
}

// Publish's claim on the server id: a node of this session is updated; a
// node left by an earlier life of this process, or a persistent one, is
// replaced; one held by a live process elsewhere is refused with the
// sentinel, and left.
func TestPublishClaimsTheServerID(t *testing.T) {
	me := process.Holder{Host: "here", PID: 10, Token: "me"}
	p := layout.Instance("s1")
	for _, c := range []struct {
		what   string
		owner  int64 // of the node found; -1: none
		holder process.Holder
		inUse  bool
		stale  int64
	}{
		{"no node", -1, process.Holder{}, false, 0},
		{"ours, this session", 0, me, false, 0},
		{"ours, an earlier session", 7, me, false, 7},
		{"a live process elsewhere", 7, process.Holder{Host: "there", PID: 10, Token: "other"}, true, 0},
		{"a persistent node nobody owns", 0, process.Holder{Host: "there", Token: "other"}, false, 0},
	} {
		rc := newMemCenter()
		if c.owner >= 0 {
			rc.put(t, p, c.owner, c.holder)
		}
		n := New(Config{RC: rc, Server: "s1", Me: me, FaultTolerance: 2, InUse: errSentinel,
			SessionTimeout: func() time.Duration { return time.Second }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		err := n.Publish(context.Background())
		if c.inUse {
			if !errors.Is(err, errSentinel) {
				t.Errorf("%s: %v, want the id refused", c.what, err)
			}
			if st := rc.nodes[p]; st.EphemeralOwner != c.owner {
				t.Errorf("%s: the node was touched", c.what)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		info, err := placement.DecodeInstance(rc.data[p])
		if err != nil || info.FaultTolerance != 2 || info.Holder != placement.Holder(me) {
			t.Errorf("%s: the node says %+v (%v), want this instance", c.what, info, err)
		}
		if st := rc.nodes[p]; st.EphemeralOwner != rc.sess.ID() {
			t.Errorf("%s: the node is not this session's", c.what)
		}
		if got := n.StaleOwner(); got != c.stale {
			t.Errorf("%s: stale owner %d, want %d", c.what, got, c.stale)
		}
	}
}
