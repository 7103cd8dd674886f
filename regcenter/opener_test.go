package regcenter_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

// A postgres:// URL in a program that does not link regcenter/postgres
// fails validation saying which import is missing, before anything is
// dialled.
func TestURLWithoutItsBackend(t *testing.T) {
	cfg := regcenter.Config{URL: "postgres://shardjob@db.example:5432/jobs?sslmode=verify-full"}
	err := cfg.Validate()
	if !errors.Is(err, regcenter.ErrInvalidConfig) || !strings.Contains(err.Error(), `import _ "github.com/shardjob/shardjob/regcenter/postgres"`) {
		t.Fatalf("Validate: %v, want ErrInvalidConfig naming the import", err)
	}
	if _, err := regcenter.Open(context.Background(), cfg); !errors.Is(err, regcenter.ErrInvalidConfig) {
		t.Fatalf("Open: %v, want ErrInvalidConfig", err)
	}
}

// A URL is one way to name the registry, not a second one; it carries no
// password (a command line or a config dump would show it).
func TestURLRules(t *testing.T) {
	regcenter.RegisterOpener("test-opener", func(context.Context, regcenter.Config, ...regcenter.Option) (regcenter.Center, error) {
		return nil, errors.New("opened")
	})
	for _, tc := range []struct {
		cfg  regcenter.Config
		says string // "" when valid
	}{
		{regcenter.Config{URL: "test-opener://u@h/db"}, ""},
		{regcenter.Config{URL: "TEST-OPENER://u@h/db"}, ""},
		{regcenter.Config{URL: "test-opener://u:secret@h/db"}, "carries a password"},
		{regcenter.Config{URL: "test-opener://u@h/db", Servers: []string{"zk:2181"}}, "use one"},
		{regcenter.Config{URL: "no-scheme"}, "not a URL with a scheme"},
		{regcenter.Config{URL: "test-opener://u@h/db", Namespace: "a/b"}, "namespace"},
	} {
		err := tc.cfg.Validate()
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.cfg.URL, err)
		case tc.says != "" && (!errors.Is(err, regcenter.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.says)):
			t.Errorf("%s: %v, want ErrInvalidConfig saying %q", tc.cfg.URL, err, tc.says)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("%s: the error shows the password: %v", tc.cfg.URL, err)
		}
	}
	if _, err := regcenter.Open(context.Background(), regcenter.Config{URL: "test-opener://u@h/db"}); err == nil || err.Error() != "opened" {
		t.Errorf("Open did not use the registered opener: %v", err)
	}
}

// A config whose fields name ZooKeeper or etcd is valid whether or not the
// program links that registry's package (a scheduler validates configs it
// never opens), and Open, in a program that does not link it, says which
// import is missing, before anything is dialled. This test binary links
// regcenter/zookeeper (for GroupCommit's tests) and not regcenter/etcd.
func TestBackendNotLinked(t *testing.T) {
	defer regcenter.UnlinkBackend(regcenter.BackendZooKeeper)()
	for _, tc := range []struct {
		cfg  regcenter.Config
		says string
	}{
		{regcenter.Config{Servers: []string{"127.0.0.1:1"}}, `servers names a ZooKeeper ensemble, but package regcenter/zookeeper is not linked into this program: import _ "github.com/shardjob/shardjob/regcenter/zookeeper"`},
		{regcenter.Config{Etcd: []string{"127.0.0.1:1"}}, `etcd names an etcd cluster, but package regcenter/etcd is not linked into this program: import _ "github.com/shardjob/shardjob/regcenter/etcd"`},
		{regcenter.Config{EmbeddedDir: t.TempDir()}, `embeddedDir names an embedded etcd member, but package regcenter/etcd is not linked into this program: import _ "github.com/shardjob/shardjob/regcenter/etcd"`},
	} {
		if err := tc.cfg.Validate(); err != nil {
			t.Errorf("%v: Validate = %v, want valid", tc.cfg, err)
		}
		_, err := regcenter.Open(context.Background(), tc.cfg)
		if !errors.Is(err, regcenter.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: Open = %v, want ErrInvalidConfig saying %q", tc.cfg, err, tc.says)
		}
	}
}

// RegisterBackend takes only the backends a field of Config names, once
// each.
func TestRegisterBackendRules(t *testing.T) {
	open := func(context.Context, regcenter.Config, ...regcenter.Option) (regcenter.Center, error) {
		return nil, nil
	}
	for _, tc := range []struct {
		name    string
		backend string
		fn      regcenter.Opener
	}{
		{"a URL's backend", regcenter.BackendPostgres, open},
		{"a nil opener", regcenter.BackendEtcd, nil},
		{"a second ZooKeeper", regcenter.BackendZooKeeper, open}, // the package is linked here
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: RegisterBackend did not panic", tc.name)
				}
			}()
			regcenter.RegisterBackend(tc.backend, tc.fn)
		}()
	}
}
