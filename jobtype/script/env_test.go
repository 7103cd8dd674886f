package script_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/jobtype/script"
)

// runEnv runs a script job that writes its whole environment, as env
// prints it, to a file, and returns it as a map.
func runEnv(t *testing.T, cfg script.Config) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "env")
	// The shell's $0 is the job name and $1 the context: env's output goes
	// to a file named by the command text itself.
	cfg.Shell = true
	cfg.Command = []string{"/usr/bin/env > " + out}
	j := newJob(t, cfg)
	if err := j.Execute(context.Background(), sc(0, "p")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for line := range strings.Lines(string(data)) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		got[k] = v
	}
	return got
}

// The registry center's digest, the console's token, the dispatcher's
// token and any other variable of the instance stay out of a script job's
// environment; the defaults, the listed variables and the job's own
// settings are in it.
func TestScriptEnvironmentHoldsNoSecret(t *testing.T) {
	secrets := map[string]string{
		"SHARDJOB_REGCENTER_DIGEST":     "ops:zk-password",
		"SHARDJOB_REGCENTER_DIGESTFILE": "/etc/shardjob/digest",
		"SHARDJOB_TOKEN":                "console-token",
		"SHARDJOB_DISPATCH_TOKEN":       "dispatch-token-0123456789",
		"SHARDJOB_HISTORY_DSN":          "postgres://u:pw@db/h",
		"SECRET_X":                      "unrelated-secret",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("REPORT_BUCKET", "s3://reports")
	t.Setenv("LC_TIME", "C.UTF-8")
	t.Setenv("TZ", "Asia/Shanghai")

	got := runEnv(t, script.Config{PassEnv: []string{"REPORT_BUCKET", "UNSET_ONE"}, Env: []string{"REGION=eu"}})
	for k, v := range secrets {
		if _, ok := got[k]; ok {
			t.Errorf("%s reached the script", k)
		}
		for gk, gv := range got {
			if strings.Contains(gv, v) && gk != script.ContextEnv {
				t.Errorf("the value of %s reached the script as %s", k, gk)
			}
		}
	}
	want := map[string]string{"REPORT_BUCKET": "s3://reports", "REGION": "eu", "LC_TIME": "C.UTF-8", "TZ": "Asia/Shanghai",
		"PATH": os.Getenv("PATH")}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["UNSET_ONE"]; ok {
		t.Error("a listed variable the instance does not have was set")
	}
	if got[script.ContextEnv] == "" {
		t.Errorf("%s missing", script.ContextEnv)
	}
	// Nothing but the defaults (and the shell's own), the listed and the
	// set ones.
	allowed := append(script.DefaultEnv(), "REPORT_BUCKET", "REGION", script.ContextEnv, "PWD", "SHLVL", "_", "OLDPWD")
	for k := range got {
		if !slices.Contains(allowed, k) && !strings.HasPrefix(k, "LC_") {
			t.Errorf("%s reached the script; it is neither a default nor listed", k)
		}
	}
}

// A config that lists one of the instance's own variables is refused,
// naming it, whether it asks to pass it or to set it.
func TestScriptConfigNamingASecretIsRefused(t *testing.T) {
	for _, c := range []struct {
		cfg  script.Config
		want string
	}{
		{script.Config{Command: []string{"x"}, PassEnv: []string{"SHARDJOB_TOKEN"}}, "SHARDJOB_TOKEN"},
		{script.Config{Command: []string{"x"}, PassEnv: []string{"HOME", "SHARDJOB_REGCENTER_DIGEST"}}, "SHARDJOB_REGCENTER_DIGEST"},
		{script.Config{Command: []string{"x"}, PassEnv: []string{"shardjob_dispatch_token"}}, "shardjob_dispatch_token"},
		{script.Config{Command: []string{"x"}, Env: []string{"SHARDJOB_TOKEN=x"}}, "SHARDJOB_TOKEN"},
		{script.Config{Command: []string{"x"}, Env: []string{script.ContextEnv + "={}"}}, script.ContextEnv},
		{script.Config{Command: []string{"x"}, PassEnv: []string{"BAD-NAME"}}, `"BAD-NAME" is not a variable name`},
		{script.Config{Command: []string{"x"}, PassEnv: []string{""}}, `passEnv "" is not a variable name`},
		{script.Config{Command: []string{"x"}, PassEnv: []string{"LC_*"}}, `"LC_*" is not a variable name`},
	} {
		_, err := script.New(c.cfg)
		if !errors.Is(err, script.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want one naming %q", c.cfg, err, c.want)
		}
	}
}
