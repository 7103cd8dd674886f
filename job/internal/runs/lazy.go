package runs

import (
	"sync"
	"sync/atomic"
)

// Lazy holds a value made at its first Get, once, and read without a
// lock after: what a job makes only once it works (package job's active
// parts). The zero Lazy is empty.
type Lazy[T any] struct {
	mu sync.Mutex // held while the value is made; a leaf: make takes no lock of this package
	p  atomic.Pointer[T]
}

// Get returns the value, made by make on the first call; a call that
// comes while another makes it waits for that one.
func (l *Lazy[T]) Get(make func() *T) *T {
	if v := l.p.Load(); v != nil {
		return v
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if v := l.p.Load(); v != nil {
		return v
	}
	v := make()
	l.p.Store(v)
	return v
}

// IfMade returns the value, or nil when no Get has made it yet.
func (l *Lazy[T]) IfMade() *T { return l.p.Load() }
