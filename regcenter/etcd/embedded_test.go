package etcd_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

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
	_, err := regcenter.Open(testCtx(t), regcenter.Config{EmbeddedDir: dir})
	if !errors.Is(err, regcenter.ErrInvalidConfig) || !strings.Contains(err.Error(), regcenter.EmbeddedEndpointFile) {
		t.Errorf("no endpoint file: %v, want ErrInvalidConfig naming %s", err, regcenter.EmbeddedEndpointFile)
	}
	if err := os.WriteFile(filepath.Join(dir, regcenter.EmbeddedEndpointFile), []byte("127.0.0.1:2379\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = regcenter.Open(testCtx(t), regcenter.Config{EmbeddedDir: dir})
	if !errors.Is(err, regcenter.ErrInvalidConfig) || !strings.Contains(err.Error(), regcenter.EmbeddedCredentialsFile) {
		t.Errorf("no credentials file: %v, want ErrInvalidConfig naming %s", err, regcenter.EmbeddedCredentialsFile)
	}
}
