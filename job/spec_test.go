package job

import "testing"

// TestConfigKindsAsTheBookNamesThem checks that the book's kinds, which the
// fire path carries (job/internal/firing), name the five kinds as
// package job does: a run's Kind is the book kind's String.
func TestConfigKindsAsTheBookNamesThem(t *testing.T) {
	for _, k := range []Kind{KindFire, KindMisfire, KindFailover, KindTrigger, KindBackfill} {
		if got := Kind(bookKind(k).String()); got != k {
			t.Errorf("Kind(bookKind(%q).String()) = %q", k, got)
		}
	}
}
