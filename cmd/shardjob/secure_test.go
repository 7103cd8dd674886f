package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

const cliSecret = "pw-7f3a9c"

// protectedNamespace creates a namespace readable only with digest and
// one job config node in it.
func protectedNamespace(t *testing.T, digest string) string {
	t.Helper()
	ns := newNamespace()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: ns, Digest: digest},
		regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	doc, err := job.Config{Name: "orders", Cron: "0 0 * * * *", ShardingTotalCount: 2}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Create(ctx, "/orders/config", doc, regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	return ns
}

// TestAdminDigestFromFileAndEnvironment: the command takes the digest from
// --digest-file, from SHARDJOB_REGCENTER_DIGEST, from
// SHARDJOB_REGCENTER_DIGESTFILE and from a job file's digestFile, and an
// unusable digest file is a usage error that names the file and not the
// secret. (Not parallel: it sets environment variables.)
func TestAdminDigestFromFileAndEnvironment(t *testing.T) {
	digest := "ops:" + cliSecret
	ns := protectedNamespace(t, digest)
	servers := strings.Join(zc.Servers(), ",")
	secret := writeFile(t, "digest", digest+"\n")
	jobsOK := func(how string, args ...string) {
		t.Helper()
		code, out, errOut := runCLI(append([]string{"jobs"}, args...)...)
		if code != exitOK || !strings.Contains(out, "orders") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", how, code, out, errOut)
		}
	}

	jobsOK("--digest-file", "--zk", servers, "--namespace", ns, "--digest-file", secret)

	yaml := writeFile(t, "jobs.yaml", fmt.Sprintf("regcenter:\n  servers: [%s]\n  namespace: %s\n  digestFile: %s\n", servers, ns, secret))
	jobsOK("--config with digestFile", "--config", yaml)

	t.Setenv("SHARDJOB_REGCENTER_SERVERS", servers)
	t.Setenv("SHARDJOB_REGCENTER_NAMESPACE", ns)
	t.Setenv("SHARDJOB_REGCENTER_DIGEST", digest)
	jobsOK("SHARDJOB_REGCENTER_DIGEST")
	// A flag replaces the environment's digest, however that was given.
	args := []string{"jobs", "--digest-file", writeFile(t, "other", "ops:n0pe\n")}
	code, out, errOut := runCLI(args...)
	checkFailure(t, args, exitFailed, []string{"not authorized", `"ops"`}, code, out, errOut)

	t.Setenv("SHARDJOB_REGCENTER_DIGEST", "")
	t.Setenv("SHARDJOB_REGCENTER_DIGESTFILE", secret)
	jobsOK("SHARDJOB_REGCENTER_DIGESTFILE")

	// The environment overrides a job file's digestFile, as it does every
	// regcenter key; clear it for the file's own.
	t.Setenv("SHARDJOB_REGCENTER_DIGESTFILE", "")
	missing := secret + ".missing"
	for _, args := range [][]string{
		{"jobs", "--digest-file", missing},
		{"jobs", "--config", writeFile(t, "bad.yaml", fmt.Sprintf("regcenter:\n  servers: [%s]\n  digestFile: %s\n", servers, missing))},
	} {
		code, out, errOut := runCLI(args...)
		checkFailure(t, args, exitUsage, []string{"digestFile", missing, "no such file"}, code, out, errOut)
	}
	args = []string{"jobs", "--digest-file", writeFile(t, "bad", cliSecret+"\n")}
	code, out, errOut = runCLI(args...)
	checkFailure(t, args, exitUsage, []string{"digestFile", "user:password"}, code, out, errOut)
	if strings.Contains(errOut, cliSecret) {
		t.Errorf("stderr shows the secret: %q", errOut)
	}
}

// TestAdminTLS runs an instance over mutual TLS with one job that fires,
// and the command against it with the --tls-* flags and their YAML and
// environment forms; without the client certificate, with the wrong CA or
// with a missing file it fails with one line that says why.
func TestAdminTLS(t *testing.T) {
	t.Parallel()
	zt := zktest.Start(t, zktest.WithMutualTLS())
	files, _ := zt.TLS()
	ns := newNamespace()
	// Generous connect timeouts where a connect must succeed: a loaded
	// machine's JVM may be slow to its first handshakes.
	rcCfg := regcenter.Config{Servers: zt.SecureServers(), Namespace: ns, TLSCAFile: files.CAFile,
		TLSCertFile: files.CertFile, TLSKeyFile: files.KeyFile, ConnectTimeout: 15 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := zookeeper.Open(ctx, rcCfg, regcenter.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rec := &recorder{}
	sched, err := job.NewScheduler(rc, job.WithServerID("s1"), job.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Add(ctx, everySecond("orders"), rec.job("s1")); err != nil {
		t.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer scancel()
		if err := sched.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	rec.waitFires(t, time.Now(), 1, allSix)

	servers := strings.Join(zt.SecureServers(), ",")
	flags := []string{"--zk", servers, "--namespace", ns, "--timeout", "3s"} // for refusals
	withTLS := []string{"--zk", servers, "--namespace", ns, "--timeout", "15s",
		"--tls-ca", files.CAFile, "--tls-cert", files.CertFile, "--tls-key", files.KeyFile}
	for _, args := range [][]string{
		append([]string{"jobs"}, withTLS...),
		append([]string{"jobs", "--tls-server-name", files.ServerName}, withTLS...),
		{"jobs", "--config", writeFile(t, "jobs.yaml", fmt.Sprintf(
			"regcenter:\n  servers: [%s]\n  namespace: %s\n  connectTimeout: 15s\n  tlsCAFile: %s\n  tlsCertFile: %s\n  tlsKeyFile: %s\n",
			servers, ns, files.CAFile, files.CertFile, files.KeyFile))},
	} {
		code, out, errOut := runCLI(args...)
		if code != exitOK || !strings.Contains(out, "orders") || !strings.Contains(out, "1/1") {
			t.Errorf("shardjob %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errOut)
		}
	}
	args := append([]string{"trigger", "orders"}, withTLS...)
	if code, out, errOut := runCLI(args...); code != exitOK || !strings.Contains(out, "triggered orders on s1") {
		t.Errorf("trigger over TLS: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	for _, tc := range []struct {
		args      []string
		code      int
		fragments []string
	}{
		{append([]string{"jobs", "--tls-ca", files.CAFile}, flags...), exitFailed, []string{"unreachable", "tls handshake failed", "certificate"}},
		{append([]string{"jobs", "--tls-ca", files.CertFile, "--tls-cert", files.CertFile, "--tls-key", files.KeyFile}, flags...),
			exitFailed, []string{"tls handshake failed", "unknown authority"}},
		{append([]string{"jobs"}, flags...), exitFailed, []string{"unreachable"}},
		{append([]string{"jobs", "--tls-ca", files.CAFile + ".missing"}, flags...), exitUsage, []string{"tlsCAFile", files.CAFile + ".missing"}},
		{append([]string{"jobs", "--tls-cert", files.CertFile}, flags...), exitUsage, []string{"tlsKeyFile"}},
	} {
		code, out, errOut := runCLI(tc.args...)
		checkFailure(t, tc.args, tc.code, tc.fragments, code, out, errOut)
	}
}
