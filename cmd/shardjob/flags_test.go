package main

import (
	"context"
	"flag"
	"strings"
	"testing"
)

// Two sources of the same setting given at the same level are refused,
// naming both, rather than one silently winning: --digest with
// --digest-file, SHARDJOB_REGCENTER_DIGEST with
// SHARDJOB_REGCENTER_DIGESTFILE, and --tls=false with a --tls-* flag that
// implies TLS.
func TestConflictingConnectionSettingsAreRefused(t *testing.T) {
	file := writeFile(t, "digest", "file:pw\n")
	for _, c := range []struct {
		args []string
		env  map[string]string
		say  []string
	}{
		{[]string{"--zk", "127.0.0.1:1", "--digest", "flag:pw", "--digest-file", file}, nil, []string{"--digest", "--digest-file", "not both"}},
		{[]string{"--zk", "127.0.0.1:1", "--digest-file=" + file, "--digest=flag:pw"}, nil, []string{"--digest", "--digest-file", "not both"}},
		{[]string{"--zk", "127.0.0.1:1"}, map[string]string{"SHARDJOB_REGCENTER_DIGEST": "env:pw", "SHARDJOB_REGCENTER_DIGESTFILE": file},
			[]string{"SHARDJOB_REGCENTER_DIGEST", "SHARDJOB_REGCENTER_DIGESTFILE", "not both"}},
		{[]string{"--zk", "127.0.0.1:1", "--etcd", "127.0.0.1:2"}, nil, []string{"--zk", "--etcd", "not both"}},
		{[]string{"--etcd=127.0.0.1:2", "--zk=127.0.0.1:1"}, nil, []string{"--zk", "--etcd", "not both"}},
		{nil, map[string]string{"SHARDJOB_REGCENTER_SERVERS": "127.0.0.1:1", "SHARDJOB_REGCENTER_ETCD": "127.0.0.1:2"},
			[]string{"SHARDJOB_REGCENTER_SERVERS", "SHARDJOB_REGCENTER_ETCD", "not both"}},
		{[]string{"--zk", "127.0.0.1:1", "--tls=false", "--tls-ca", file}, nil, []string{"--tls=false", "--tls-ca"}},
		{[]string{"--zk", "127.0.0.1:1", "--tls=false", "--tls-server-name", "zk"}, nil, []string{"--tls=false", "--tls-server-name"}},
	} {
		getenv := func(k string) string { return c.env[k] }
		var o options
		fs := newFlagSet(lookup("jobs"), &o)
		if _, err := parseArgs(fs, c.args); err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		cfg, err := regcenterConfig(&o, set, getenv)
		if err == nil {
			t.Errorf("%v %v: accepted, digest %q digestFile %q tls %v", c.args, c.env, cfg.Digest, cfg.DigestFile, cfg.TLS)
			continue
		}
		if exitCode(err) != exitUsage {
			t.Errorf("%v: exit code %d for %v, want usage", c.args, exitCode(err), err)
		}
		for _, s := range c.say {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%v %v: %q does not say %q", c.args, c.env, err, s)
			}
		}
		// The console reads the same flags and the same environment.
		var out, errOut strings.Builder
		code := runConsoleCtx(context.Background(), c.args, &out, &errOut, getenv)
		if code != exitUsage || !strings.Contains(errOut.String(), c.say[0]) {
			t.Errorf("console %v: exit %d, stderr %q", c.args, code, errOut.String())
		}
	}
	// A flag over the environment is precedence, not a conflict.
	var o options
	fs := newFlagSet(lookup("jobs"), &o)
	if _, err := parseArgs(fs, []string{"--zk", "127.0.0.1:1", "--digest-file", file}); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg, err := regcenterConfig(&o, set, func(k string) string {
		return map[string]string{"SHARDJOB_REGCENTER_DIGEST": "env:pw"}[k]
	})
	if err != nil || cfg.DigestFile != file || cfg.Digest != "" {
		t.Errorf("--digest-file over SHARDJOB_REGCENTER_DIGEST: %+v %v", cfg, err)
	}
}

// --etcd and SHARDJOB_REGCENTER_ETCD name etcd endpoints; a flag or
// variable naming one registry replaces the other registry of a weaker
// source (a flag over the environment, either over the --config file).
func TestEtcdFlagAndEnvironment(t *testing.T) {
	t.Setenv("SHARDJOB_REGCENTER_SERVERS", "")
	t.Setenv("SHARDJOB_REGCENTER_ETCD", "")
	zkFile := writeFile(t, "zk.yaml", "regcenter:\n  servers: [file:2181]\n  namespace: filens\njobs: []\n")
	etcdFile := writeFile(t, "etcd.yaml", "regcenter:\n  etcd: [file:2379]\n  namespace: filens\njobs: []\n")
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	resolve := func(args ...string) (servers, etcd string) {
		t.Helper()
		var o options
		fs := newFlagSet(lookup("status"), &o)
		if _, err := parseArgs(fs, args); err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		cfg, err := regcenterConfig(&o, set, getenv)
		if err != nil {
			t.Fatalf("%v %v: %v", args, env, err)
		}
		return strings.Join(cfg.Servers, ","), strings.Join(cfg.Etcd, ",")
	}
	check := func(what, gotZK, gotEtcd, wantZK, wantEtcd string) {
		t.Helper()
		if gotZK != wantZK || gotEtcd != wantEtcd {
			t.Errorf("%s: servers %q etcd %q, want servers %q etcd %q", what, gotZK, gotEtcd, wantZK, wantEtcd)
		}
	}
	zk, etcd := resolve("--etcd", "a:1, b:2")
	check("--etcd", zk, etcd, "", "a:1,b:2")
	zk, etcd = resolve("--config", etcdFile)
	check("file with etcd", zk, etcd, "", "file:2379")
	zk, etcd = resolve("--config", zkFile, "--etcd", "a:1")
	check("--etcd over a file with servers", zk, etcd, "", "a:1")
	zk, etcd = resolve("--config", etcdFile, "--zk", "z:1")
	check("--zk over a file with etcd", zk, etcd, "z:1", "")

	env["SHARDJOB_REGCENTER_ETCD"] = "env:2379"
	zk, etcd = resolve()
	check("SHARDJOB_REGCENTER_ETCD", zk, etcd, "", "env:2379")
	zk, etcd = resolve("--zk", "z:1")
	check("--zk over SHARDJOB_REGCENTER_ETCD", zk, etcd, "z:1", "")
	t.Setenv("SHARDJOB_REGCENTER_ETCD", "env:2379") // jobfile.LoadFile reads the process's environment
	zk, etcd = resolve("--config", zkFile)
	check("SHARDJOB_REGCENTER_ETCD over a file with servers", zk, etcd, "", "env:2379")

	// An endpoint that is not host:port is a usage error naming the field.
	var o options
	fs := newFlagSet(lookup("status"), &o)
	if _, err := parseArgs(fs, []string{"--etcd", "nohostport"}); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if _, err := regcenterConfig(&o, set, getenv); err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), `etcd: "nohostport" is not host:port`) {
		t.Errorf("--etcd nohostport: %v", err)
	}
	// The flag is found among the arguments before the command.
	if cmd, rest := findCommand([]string{"--etcd", "a:1", "jobs"}); cmd != "jobs" || len(rest) != 2 {
		t.Errorf("findCommand with --etcd first: %q %v", cmd, rest)
	}
}
