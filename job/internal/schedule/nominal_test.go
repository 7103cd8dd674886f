package schedule

import (
	"testing"
	"time"
)

// TestNominalFireInvertsTheJitter: two jobs on one cron with other
// jitters match their fires by the time before jitter, so NominalFire
// must undo JitteredFire for every fire, and leave an unjittered
// schedule's times alone.
func TestNominalFireInvertsTheJitter(t *testing.T) {
	base, perr := ParseCron("*/10 * * * * *", time.UTC, time.Second)
	if perr != nil {
		t.Fatal(perr.Detail)
	}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, jitter := range []time.Duration{0, 3 * time.Second} {
		a := Apply(base, time.UTC, Calendar{Name: "a", Jitter: jitter})
		b := Apply(base, time.UTC, Calendar{Name: "b", Jitter: jitter})
		for n := a.NextNominal(t0); n.Before(t0.Add(5 * time.Minute)); n = a.NextNominal(n) {
			fa, fb := JitteredFire(a, n), JitteredFire(b, n)
			if got := a.Next(n.Add(-time.Nanosecond)); jitter > 0 && !got.Equal(fa) {
				t.Fatalf("jitter %v: a's fire of %v is %v, JitteredFire says %v", jitter, n, got, fa)
			}
			if got := NominalFire(a, fa); !got.Equal(n) {
				t.Fatalf("jitter %v: NominalFire(a, %v) = %v, want %v", jitter, fa, got, n)
			}
			if got := JitteredFire(b, NominalFire(a, fa)); !got.Equal(fb) {
				t.Fatalf("jitter %v: a's fire %v maps to b's %v, want %v", jitter, fa, got, fb)
			}
		}
	}
	if at := t0.Add(1234 * time.Millisecond); !NominalFire(base, at).Equal(at) || !JitteredFire(base, at).Equal(at) {
		t.Fatal("a schedule without a calendar moved a time")
	}
}
