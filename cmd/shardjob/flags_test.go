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
