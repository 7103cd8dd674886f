package health

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
)

// Failed probes add to the peer's counter, whoever probes; the one that
// brings it to Failures marks the peer offline, and a success resets the
// counter and removes the mark.
func TestProbeCounterMarksAPeerOfflineAndOnline(t *testing.T) {
	rc := newMemCenter()
	var offline, online []string
	probes := func(self string) Probes {
		return Probes{
			Every: time.Second, Self: self, Failures: 3, RC: rc, Timeout: time.Second,
			PeerOffline: func(peer string, _ error) { offline = append(offline, peer) },
			PeerOnline:  func(peer string) { online = append(online, peer) },
			Log:         slog.New(slog.DiscardHandler),
		}
	}
	ctx := context.Background()
	down := errors.New("down")
	counter := func() string {
		n, _ := rc.node(layout.Probe("p"))
		return string(n.data)
	}
	for i, self := range []string{"a", "b", "a", "b"} {
		if err := probes(self).record(ctx, "p", down); err != nil {
			t.Fatal(err)
		}
		if _, marked := rc.node(layout.OfflineEntry("p")); marked != (i >= 2) {
			t.Fatalf("after %d failures: offline mark %v", i+1, marked)
		}
	}
	if counter() != "4" || len(offline) != 1 || len(online) != 0 {
		t.Fatalf("after 4 failures: counter %q, offline events %v, online %v", counter(), offline, online)
	}
	if err := probes("b").record(ctx, "p", nil); err != nil {
		t.Fatal(err)
	}
	if _, marked := rc.node(layout.OfflineEntry("p")); marked || counter() != "0" || len(online) != 1 {
		t.Fatalf("after a success: offline mark %v, counter %q, online events %v", marked, counter(), online)
	}
	if err := probes("a").record(ctx, "p", nil); err != nil || len(online) != 1 {
		t.Fatalf("a second success: %v, online events %v, want one", err, online)
	}
}

func TestProbeTakesAny2xxAsHealthy(t *testing.T) {
	code := http.StatusNoContent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
	defer srv.Close()
	p := Probes{Every: time.Second, Client: srv.Client()}
	if err := p.probe(context.Background(), "p", srv.URL); err != nil {
		t.Fatalf("204: %v", err)
	}
	code = http.StatusServiceUnavailable
	if err := p.probe(context.Background(), "p", srv.URL); err == nil {
		t.Fatal("503 taken as healthy")
	}
}
