package postgres_test

import (
	"testing"

	"github.com/shardjob/shardjob/regcenter/centertest"
)

// TestConformance runs the conformance suite every Center must pass
// against PostgreSQL, on a server of its own (the suite restarts it).
func TestConformance(t *testing.T) {
	srv := ownServer(t)
	centertest.Run(t, factory(t, srv, true))
}
