package embedded_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/embedded"
	"github.com/shardjob/shardjob/regcenter/etcd"
)

// rawClient is a plain etcd client of endpoint, as any local user could
// make one, with the given user and password (none when empty).
func rawClient(t *testing.T, endpoint, user, pass string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 20 * time.Second,
		Username: user, Password: pass, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// plant writes key through a plain etcd client of endpoint, with the given
// user and password (none when empty), as any local user could.
func plant(ctx context.Context, endpoint, user, pass, key string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 20 * time.Second,
		Username: user, Password: pass, Logger: zap.NewNop(), Context: ctx})
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Put(ctx, key, "planted")
	return err
}

// mode returns name's permission bits.
func mode(t *testing.T, name string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestEmbeddedRefusesClientsWithoutCredentials: a local client that does
// not name the member's Dir (so has not read its credentials) can neither
// connect a center nor write a key; one that names the Dir can.
func TestEmbeddedRefusesClientsWithoutCredentials(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	srv, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	_, err = etcd.Open(ctx, regcenter.Config{Etcd: []string{srv.Endpoint()}, Namespace: "shop", ConnectTimeout: 20 * time.Second})
	if !errors.Is(err, regcenter.ErrUnauthorized) {
		t.Fatalf("a center without credentials: %v, want ErrUnauthorized", err)
	}
	if !strings.Contains(err.Error(), "authentication") {
		t.Errorf("%q does not say that the member requires authentication", err)
	}
	if err := plant(ctx, srv.Endpoint(), "", "", "/shop/n/001/orders"); err == nil {
		t.Fatal("a client without credentials wrote a key")
	}
	if err := plant(ctx, srv.Endpoint(), "root", "guess", "/shop/n/001/orders"); err == nil {
		t.Fatal("a client with a guessed password wrote a key")
	}

	c, err := regcenter.Open(ctx, regcenter.Config{EmbeddedDir: dir, Namespace: "shop"})
	if err != nil {
		t.Fatalf("a center naming the Dir: %v", err)
	}
	defer c.Close()
	if _, err := c.Create(ctx, "/orders", []byte("x"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
}

// TestEmbeddedCredentialsFile: the Dir is owner-only, the credentials file
// is owner-only and outlives the member, the endpoint file is there while
// the member runs; a restart on the same Dir keeps the credentials, and
// the member still refuses clients without them.
func TestEmbeddedCredentialsFile(t *testing.T) {
	ctx := testCtx(t)
	dir := filepath.Join(t.TempDir(), "registry")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	cred := filepath.Join(dir, regcenter.EmbeddedCredentialsFile)
	endpoint := filepath.Join(dir, regcenter.EmbeddedEndpointFile)
	m, err := embedded.New(ctx, embedded.Config{Dir: dir, Namespace: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	if got := mode(t, dir); got != 0o700 {
		t.Errorf("Dir mode %v, want 0700", got)
	}
	if got := mode(t, cred); got != 0o600 {
		t.Errorf("%s mode %v, want 0600", cred, got)
	}
	if got := mode(t, endpoint); got != 0o600 {
		t.Errorf("%s mode %v, want 0600", endpoint, got)
	}
	first, err := os.ReadFile(cred)
	if err != nil {
		t.Fatal(err)
	}
	user, pass, ok := strings.Cut(strings.TrimSuffix(string(first), "\n"), ":")
	if !ok || user == "" || len(pass) < 32 {
		t.Fatalf("%s holds %d bytes, not user:password with a long password", cred, len(first))
	}
	if ep, err := os.ReadFile(endpoint); err != nil || strings.TrimSpace(string(ep)) != m.Endpoint() {
		t.Fatalf("%s: %q, %v; want %s", endpoint, ep, err, m.Endpoint())
	}
	if _, err := m.Create(ctx, "/job/config", []byte("cron"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(endpoint); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Close: %v, want it removed", endpoint, err)
	}
	if _, err := regcenter.Open(ctx, regcenter.Config{EmbeddedDir: dir}); !errors.Is(err, regcenter.ErrInvalidConfig) || !strings.Contains(err.Error(), "running") {
		t.Errorf("naming the Dir of a stopped member: %v, want ErrInvalidConfig asking whether it runs", err)
	}

	srv, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		t.Fatalf("restart on the same Dir: %v", err)
	}
	defer srv.Close()
	if again, err := os.ReadFile(cred); err != nil || string(again) != string(first) {
		t.Fatalf("credentials after a restart changed (%v)", err)
	}
	defer func() {
		// A credentials file the member's data does not know is refused
		// at start, naming the file.
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cred, []byte("root:another\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := embedded.Start(ctx, embedded.Config{Dir: dir})
		if err == nil {
			s.Close()
			t.Fatal("started with credentials the member does not know")
		}
		if !errors.Is(err, regcenter.ErrUnauthorized) || !strings.Contains(err.Error(), regcenter.EmbeddedCredentialsFile) {
			t.Errorf("start with other credentials: %v, want ErrUnauthorized naming %s", err, regcenter.EmbeddedCredentialsFile)
		}
	}()
	c, err := regcenter.Open(ctx, regcenter.Config{EmbeddedDir: dir, Namespace: "demo"})
	if err != nil {
		t.Fatalf("a center naming the Dir after a restart: %v", err)
	}
	defer c.Close()
	if data, _, err := c.Get(ctx, "/job/config"); err != nil || string(data) != "cron" {
		t.Fatalf("/job/config after a restart: %q, %v", data, err)
	}
	if err := plant(ctx, srv.Endpoint(), "", "", "/demo/n/001/job"); err == nil {
		t.Fatal("after a restart, a client without credentials wrote a key")
	}
}

// TestEmbeddedTurnsAuthOnInAnOldDir: a Dir whose member ran without
// authentication (as every member did before it had credentials) keeps
// its data and gets credentials at its next start.
func TestEmbeddedTurnsAuthOnInAnOldDir(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	old := embed.NewConfig()
	old.Dir = dir
	old.Logger, old.ZapLoggerBuilder = "zap", embed.NewZapLoggerBuilder(zap.NewNop())
	for _, u := range []*[]url.URL{&old.ListenClientUrls, &old.AdvertiseClientUrls, &old.ListenPeerUrls, &old.AdvertisePeerUrls} {
		*u = nil
	}
	cu, _ := url.Parse("http://127.0.0.1:0")
	pu, _ := url.Parse("http://127.0.0.1:0")
	old.ListenClientUrls, old.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	old.ListenPeerUrls, old.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	old.Name = "shardjob"
	old.InitialCluster = "shardjob=http://127.0.0.1:0"
	e, err := embed.StartEtcd(old)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		e.Close()
		t.Fatal("the old member did not start within a minute")
	}
	oldEP := e.Clients[0].Addr().String()
	if _, err := rawClient(t, oldEP, "", "").Put(ctx, "kept", "yes"); err != nil {
		e.Close()
		t.Fatal(err)
	}
	e.Close()

	srv, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	digest, err := regcenter.Config{DigestFile: filepath.Join(dir, regcenter.EmbeddedCredentialsFile)}.ResolveDigest()
	if err != nil {
		t.Fatal(err)
	}
	user, pass, _ := strings.Cut(digest, ":")
	if resp, err := rawClient(t, srv.Endpoint(), user, pass).Get(ctx, "kept"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the old data with the new credentials: %v, %v", resp, err)
	}
	if err := plant(ctx, srv.Endpoint(), "", "", "kept"); err == nil {
		t.Fatal("a client without credentials wrote a key")
	}
}

// TestEmbeddedCenterOutlivesAMemberRestart: a center keeps working across a
// restart of the member on the same Dir and port, though the member
// forgets the tokens it gave: its requests and its watch log in again;
// and the member still refuses clients without credentials.
func TestEmbeddedCenterOutlivesAMemberRestart(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv, err := embedded.Start(ctx, embedded.Config{Dir: dir, ClientPort: port})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Close() }()
	c, err := regcenter.Open(ctx, srv.Config(regcenter.Config{Namespace: "restart"}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	created := make(chan struct{}, 1)
	stop := c.Watch("/after", regcenter.WatchNode, func(ev regcenter.Event) {
		if ev.Type == regcenter.EventCreated {
			select {
			case created <- struct{}{}:
			default:
			}
		}
	})
	defer stop()
	if _, err := c.Create(ctx, "/before", nil, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if srv, err = embedded.Start(ctx, embedded.Config{Dir: dir, ClientPort: port}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.Create(rctx, "/after", nil, regcenter.Persistent)
		cancel()
		if err == nil || errors.Is(err, regcenter.ErrNodeExists) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request answered within a minute of the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-created:
	case <-time.After(time.Minute):
		t.Fatal("the watch saw no creation within a minute of the restart")
	}
	if err := plant(ctx, srv.Endpoint(), "", "", "/restart/n/001/after"); err == nil {
		t.Fatal("after the restart, a client without credentials wrote a key")
	}
}
