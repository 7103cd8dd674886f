package jobfile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
	"github.com/shardjob/shardjob/regcenter"
)

// TestLoadDigestFileAndTLS: the regcenter section takes digestFile and the
// TLS keys, the environment overrides them, and a bad combination is
// refused without showing any secret.
func TestLoadDigestFileAndTLS(t *testing.T) {
	clearRegcenterEnvForTest(t)
	doc := `regcenter:
  servers: [zk1:2281]
  digestFile: /etc/shardjob/digest
  tlsCAFile: /etc/shardjob/ca.pem
  tlsCertFile: /etc/shardjob/client.pem
  tlsKeyFile: /etc/shardjob/client-key.pem
  tlsServerName: zk.internal
`
	f, err := jobfile.Load(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := regcenter.Config{Servers: []string{"zk1:2281"}, DigestFile: "/etc/shardjob/digest",
		TLSCAFile: "/etc/shardjob/ca.pem", TLSCertFile: "/etc/shardjob/client.pem",
		TLSKeyFile: "/etc/shardjob/client-key.pem", TLSServerName: "zk.internal"}.WithDefaults()
	if got := f.Regcenter; got.String() != want.String() {
		t.Errorf("regcenter:\n got %v\nwant %v", got, want)
	}

	t.Setenv("SHARDJOB_REGCENTER_DIGESTFILE", "/run/secrets/digest")
	t.Setenv("SHARDJOB_REGCENTER_TLS", "true")
	f, err = jobfile.Load(strings.NewReader("regcenter:\n  servers: [zk1:2281]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Regcenter.DigestFile != "/run/secrets/digest" || !f.Regcenter.TLS {
		t.Errorf("environment not applied: %v", f.Regcenter)
	}

	clearRegcenterEnvForTest(t)
	for _, c := range []struct{ doc, want string }{
		{"regcenter:\n  servers: [zk1:2281]\n  digest: ops:hunter2\n  digestFile: /x\n", "both set"},
		{"regcenter:\n  servers: [zk1:2281]\n  tlsCertFile: /c.pem\n", "tlsKeyFile"},
		{"regcenter:\n  servers: [zk1:2281]\n  tls: maybe\n", "true or false"},
	} {
		_, err := jobfile.Load(strings.NewReader(c.doc))
		if !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want ErrInvalidConfig mentioning %q", c.doc, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}
