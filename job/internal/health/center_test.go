package health

import (
	"context"
	"strings"
	"sync"

	"github.com/shardjob/shardjob/regcenter"
)

// memCenter is the part of a registry the offline marks and the probe
// counters use, in memory: nodes with their data and versions. The other
// methods are not there (the embedded nil interface panics).
type memCenter struct {
	regcenter.Center
	mu    sync.Mutex
	nodes map[string]memNode
}

type memNode struct {
	data    []byte
	version int32
}

func newMemCenter() *memCenter { return &memCenter{nodes: map[string]memNode{}} }

func (m *memCenter) node(path string) (memNode, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[path]
	return n, ok
}

func (m *memCenter) Get(_ context.Context, path string) ([]byte, regcenter.Stat, error) {
	n, ok := m.node(path)
	if !ok {
		return nil, regcenter.Stat{}, regcenter.ErrNoNode
	}
	return n.data, regcenter.Stat{Version: n.version}, nil
}

func (m *memCenter) Create(_ context.Context, path string, data []byte, _ regcenter.Mode) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.nodes[path]; ok {
		return "", regcenter.ErrNodeExists
	}
	m.nodes[path] = memNode{data: data}
	return path, nil
}

func (m *memCenter) EnsurePath(_ context.Context, path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := path; p != ""; p = p[:strings.LastIndex(p, "/")] {
		if _, ok := m.nodes[p]; !ok {
			m.nodes[p] = memNode{}
		}
	}
	return nil
}

func (m *memCenter) Set(_ context.Context, path string, data []byte, version int32) (regcenter.Stat, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[path]
	switch {
	case !ok:
		return regcenter.Stat{}, regcenter.ErrNoNode
	case version != -1 && version != n.version:
		return regcenter.Stat{}, regcenter.ErrBadVersion
	}
	m.nodes[path] = memNode{data: data, version: n.version + 1}
	return regcenter.Stat{Version: n.version + 1}, nil
}

func (m *memCenter) Delete(_ context.Context, path string, version int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[path]
	switch {
	case !ok:
		return regcenter.ErrNoNode
	case version != -1 && version != n.version:
		return regcenter.ErrBadVersion
	}
	delete(m.nodes, path)
	return nil
}
