package regcenter_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

const password = "s3cr3t-pw"

// TestConfigNeverPrintsThePassword: fmt's verbs and slog show the digest's
// user only.
func TestConfigNeverPrintsThePassword(t *testing.T) {
	cfg := regcenter.Config{Servers: []string{"zk1:2181"}, Namespace: "shop", Digest: "ops:" + password}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("connecting", "regcenter", cfg)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("connecting", "regcenter", cfg)
	for _, out := range []string{fmt.Sprint(cfg), fmt.Sprintf("%v|%+v|%#v|%s", cfg, cfg, cfg, cfg), cfg.String(), buf.String()} {
		if strings.Contains(out, password) {
			t.Errorf("password shown: %s", out)
		}
		if !strings.Contains(out, "ops:") || !strings.Contains(out, "zk1:2181") {
			t.Errorf("config rendered without its user or servers: %s", out)
		}
	}
}

// TestConfigLogsTheEtcdEndpoints: a config for etcd says where it points
// in the log, as one for ZooKeeper does.
func TestConfigLogsTheEtcdEndpoints(t *testing.T) {
	cfg := regcenter.Config{Etcd: []string{"etcd1:2379", "etcd2:2379"}, Namespace: "shop", Digest: "ops:" + password}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("connecting", "regcenter", cfg)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("connecting", "regcenter", cfg)
	out := buf.String()
	if !strings.Contains(out, "etcd1:2379") || !strings.Contains(out, "etcd2:2379") {
		t.Errorf("log lines without the etcd endpoints: %s", out)
	}
	if strings.Contains(out, password) {
		t.Errorf("password shown: %s", out)
	}
}

// TestEmbeddedDirConfig: embeddedDir names a registry of its own; it goes
// with no other registry and no digest, and a directory without the
// member's files is refused before connecting, naming the file.
func TestEmbeddedDirConfig(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []regcenter.Config{
		{EmbeddedDir: dir, Servers: []string{"127.0.0.1:2181"}},
		{EmbeddedDir: dir, Etcd: []string{"127.0.0.1:2379"}},
		{EmbeddedDir: dir, Digest: "root:pw"},
		{EmbeddedDir: dir, DigestFile: "/etc/shardjob/digest"},
	} {
		if err := c.Validate(); !errors.Is(err, regcenter.ErrInvalidConfig) {
			t.Errorf("%v: Validate = %v, want ErrInvalidConfig", c, err)
		}
	}
	if err := (regcenter.Config{EmbeddedDir: dir}).Validate(); err != nil {
		t.Fatalf("embeddedDir alone: %v", err)
	}
	_, err := regcenter.Open(ctx(t), regcenter.Config{EmbeddedDir: dir})
	if !errors.Is(err, regcenter.ErrInvalidConfig) || !strings.Contains(err.Error(), regcenter.EmbeddedEndpointFile) {
		t.Errorf("no endpoint file: %v, want ErrInvalidConfig naming %s", err, regcenter.EmbeddedEndpointFile)
	}
	if err := os.WriteFile(filepath.Join(dir, regcenter.EmbeddedEndpointFile), []byte("127.0.0.1:2379\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = regcenter.Open(ctx(t), regcenter.Config{EmbeddedDir: dir})
	if !errors.Is(err, regcenter.ErrInvalidConfig) || !strings.Contains(err.Error(), regcenter.EmbeddedCredentialsFile) {
		t.Errorf("no credentials file: %v, want ErrInvalidConfig naming %s", err, regcenter.EmbeddedCredentialsFile)
	}
}
