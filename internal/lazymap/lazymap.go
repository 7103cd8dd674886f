// Package lazymap sets keys of maps made at their first key: a struct that
// many jobs each hold (a runner's caches, books and claims) costs no map
// until it records something. Reading, ranging over and deleting from a
// nil map are Go's own; only a write needs the map made.
package lazymap

// Set sets (*m)[k] to v, making *m first if it is nil.
func Set[M ~map[K]V, K comparable, V any](m *M, k K, v V) {
	if *m == nil {
		*m = make(M)
	}
	(*m)[k] = v
}
