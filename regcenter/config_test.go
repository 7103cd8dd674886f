package regcenter_test

import (
	"bytes"
	"fmt"
	"log/slog"
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
