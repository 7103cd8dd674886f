package main

import (
	"context"
	"testing"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/embedded"
)

// TestEmbeddedMemberByItsDir: the CLI reaches an embedded member on this
// host by its Dir (--embedded or SHARDJOB_REGCENTER_EMBEDDEDDIR), reading
// the credentials there; by its endpoint alone it is refused, with the
// way in named.
func TestEmbeddedMemberByItsDir(t *testing.T) {
	for _, k := range []string{"SERVERS", "ETCD", "EMBEDDEDDIR", "DIGEST", "DIGESTFILE"} {
		t.Setenv("SHARDJOB_REGCENTER_"+k, "")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv, err := embedded.Start(ctx, embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ns := newNamespace()
	c, err := regcenter.Open(ctx, srv.Config(regcenter.Config{Namespace: ns}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create(ctx, "/orders/config", []byte("cron: 0 0 0 1 1 *\nshardingTotalCount: 2\n"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}

	if code, out, errOut := runCLI("jobs", "--embedded", dir, "--namespace", ns); code != 0 {
		t.Fatalf("jobs --embedded: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	t.Setenv("SHARDJOB_REGCENTER_EMBEDDEDDIR", dir)
	if code, _, errOut := runCLI("jobs", "--namespace", ns); code != 0 {
		t.Fatalf("jobs with SHARDJOB_REGCENTER_EMBEDDEDDIR: exit %d, stderr %q", code, errOut)
	}
	t.Setenv("SHARDJOB_REGCENTER_EMBEDDEDDIR", "")

	code, out, errOut := runCLI("jobs", "--etcd", srv.Endpoint(), "--namespace", ns, "--timeout", "20s")
	checkFailure(t, []string{"jobs", "--etcd", srv.Endpoint()}, exitFailed, []string{"requires authentication", "embeddedDir"}, code, out, errOut)

	code, out, errOut = runCLI("jobs", "--etcd", srv.Endpoint(), "--embedded", dir)
	checkFailure(t, []string{"jobs", "--etcd", srv.Endpoint(), "--embedded", dir}, exitUsage, []string{"--etcd", "--embedded", "not both"}, code, out, errOut)
}
