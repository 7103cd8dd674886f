package embedded_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/embedded"
)

// BenchmarkEmbeddedAuth measures what etcd's authentication costs a
// center on the embedded member: a Set and a Get, one at a time, with the
// member's credentials (authentication on, as the member runs) and, on the
// same member with authentication turned off, without them.
func BenchmarkEmbeddedAuth(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := b.TempDir()
	srv, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	run := func(b *testing.B, cfg regcenter.Config) {
		c, err := regcenter.Open(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Create(ctx, "/bench", []byte("x"), regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
			b.Fatal(err)
		}
		data := []byte(strings.Repeat("x", 100))
		b.ResetTimer()
		for range b.N {
			if _, err := c.Set(ctx, "/bench", data, -1); err != nil {
				b.Fatal(err)
			}
			if _, _, err := c.Get(ctx, "/bench"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("auth=on", func(b *testing.B) {
		run(b, srv.Config(regcenter.Config{Namespace: "benchon"}))
	})
	b.Run("auth=off", func(b *testing.B) {
		digest := srv.Config(regcenter.Config{}).Digest
		user, pass, _ := strings.Cut(digest, ":")
		admin, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, Username: user, Password: pass,
			DialTimeout: 20 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			b.Fatal(err)
		}
		defer admin.Close()
		if _, err := admin.AuthDisable(ctx); err != nil {
			b.Fatal(err)
		}
		defer func() {
			if _, err := admin.AuthEnable(ctx); err != nil {
				b.Error(err)
			}
		}()
		run(b, regcenter.Config{Etcd: []string{srv.Endpoint()}, Namespace: "benchoff"})
	})
}
