package embedded_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/embedded"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestEmbedded: the embedded member keeps persistent nodes across a restart
// on the same directory, and removes the ephemeral ones at Close.
func TestEmbedded(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	if _, err := embedded.New(ctx, embedded.Config{}); !errors.Is(err, regcenter.ErrInvalidConfig) {
		t.Fatalf("no dir: %v, want ErrInvalidConfig", err)
	}
	m, err := embedded.New(ctx, embedded.Config{Dir: dir, Namespace: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]regcenter.Mode{"/job/config": regcenter.Persistent, "/job/eph": regcenter.Ephemeral} {
		if _, err := m.Create(ctx, p, []byte(p), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = embedded.New(ctx, embedded.Config{Dir: dir, Namespace: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	kids, err := m.Children(ctx, "/job")
	if err != nil || len(kids) != 1 || kids[0] != "config" {
		t.Fatalf("children of /job after a restart: %v, %v; want [config]", kids, err)
	}
	// Close is idempotent.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestEmbeddedServerSharedByCenters: one embedded member serves several
// centers, each with a session of its own: one's ephemeral node is seen by
// the other and goes when its owner closes, and the data outlives the
// member in its directory.
func TestEmbeddedServerSharedByCenters(t *testing.T) {
	ctx := testCtx(t)
	if _, err := embedded.Start(ctx, embedded.Config{}); !errors.Is(err, regcenter.ErrInvalidConfig) {
		t.Fatalf("no dir: %v, want ErrInvalidConfig", err)
	}
	if _, err := embedded.Start(ctx, embedded.Config{Dir: t.TempDir(), ClientPort: 70000}); !errors.Is(err, regcenter.ErrInvalidConfig) {
		t.Fatalf("clientPort 70000: %v, want ErrInvalidConfig", err)
	}
	dir := t.TempDir()
	srv, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := srv.Config(regcenter.Config{Servers: []string{"ignored:2181"}, Namespace: "shared", SessionTimeout: 2 * time.Second})
	if len(cfg.Servers) != 0 || len(cfg.Etcd) != 1 || cfg.Etcd[0] != srv.Endpoint() || cfg.Namespace != "shared" {
		t.Fatalf("Config = %+v, want the member's endpoint only", cfg)
	}
	var centers []regcenter.Center
	for range 2 {
		c, err := regcenter.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		centers = append(centers, c)
	}
	a, b := centers[0], centers[1]
	if a.Session().ID() == b.Session().ID() {
		t.Fatalf("two centers share session %v", a.Session().ID())
	}
	if _, err := a.Create(ctx, "/job/servers/a/status", []byte("READY"), regcenter.Ephemeral); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx, "/job/config", []byte("cron"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := b.Exists(ctx, "/job/servers/a/status"); err != nil || !ok {
		t.Fatalf("b sees a's ephemeral node: %v, %v", ok, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := b.Exists(ctx, "/job/servers/a/status"); err != nil || ok {
		t.Fatalf("a's ephemeral node after a closed: exists %v, %v", ok, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := embedded.New(ctx, embedded.Config{Dir: dir, Namespace: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if data, _, err := m.Get(ctx, "/job/config"); err != nil || string(data) != "cron" {
		t.Fatalf("/job/config after a restart: %q, %v", data, err)
	}
}
