package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// "shardjob version" prints the module and the Go release of the binary
// it runs in, needs no registry, and refuses arguments.
func TestVersionCommand(t *testing.T) {
	code, out, errOut := runCLI("version")
	if code != exitOK || errOut != "" {
		t.Fatalf("shardjob version: exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "built with "+runtime.Version()) {
		t.Errorf("shardjob version: %q does not name the Go release %s", out, runtime.Version())
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path != "" && !strings.Contains(out, bi.Main.Path) {
		t.Errorf("shardjob version: %q does not name the module %s", out, bi.Main.Path)
	}
	code, _, errOut = runCLI("version", "extra")
	if code != exitUsage || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("shardjob version extra: exit %d, stderr %q; want exit %d naming the argument", code, errOut, exitUsage)
	}
	code, out, _ = runCLI("help")
	if code != exitOK || !strings.Contains(out, "\n  version ") {
		t.Errorf("shardjob help does not list version:\n%s", out)
	}
}

// versionText shows the module version and the source revision a
// release or a checkout build carries, and says so when it knows none.
func TestVersionText(t *testing.T) {
	release := &debug.BuildInfo{Main: debug.Module{Path: "github.com/shardjob/shardjob", Version: "v1.4.2"}}
	if got, want := versionText(release, true, "go1.26.0"), "shardjob v1.4.2 (github.com/shardjob/shardjob)\nbuilt with go1.26.0\n"; got != want {
		t.Errorf("release: got %q, want %q", got, want)
	}
	checkout := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/shardjob/shardjob", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0c31877abc"},
			{Key: "vcs.time", Value: "2026-11-27T12:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	want := "shardjob (devel) (github.com/shardjob/shardjob)\nrevision 0c31877abc of 2026-11-27T12:00:00Z, with local changes\nbuilt with go1.26.0\n"
	if got := versionText(checkout, true, "go1.26.0"); got != want {
		t.Errorf("checkout: got %q, want %q", got, want)
	}
	if got := versionText(nil, false, "go1.26.0"); !strings.Contains(got, "version unknown") || !strings.Contains(got, "go1.26.0") {
		t.Errorf("no build info: got %q", got)
	}
}

// A mistyped command is answered with the command it is nearest to, the
// way the YAML loader answers a mistyped key; a name near none gets no
// guess.
func TestUnknownCommandSuggestsTheNearest(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" for no suggestion
	}{
		{[]string{"stauts"}, `did you mean "status"?`},
		{[]string{"Jobs"}, `did you mean "jobs"?`},
		{[]string{"dispach"}, `did you mean "dispatch"?`},
		{[]string{"verison"}, `did you mean "version"?`},
		{[]string{"disable-itme", "j", "1"}, `did you mean "disable-item"?`},
		{[]string{"help", "tirgger"}, `did you mean "trigger"?`},
		{[]string{"frobnicate"}, ""},
		{[]string{"help", "help"}, ""},
	} {
		code, out, errOut := runCLI(c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "unknown command") {
			t.Errorf("shardjob %s: exit %d, stdout %q, stderr %q; want exit %d and an unknown command", strings.Join(c.args, " "), code, out, errOut, exitUsage)
			continue
		}
		switch {
		case c.want == "" && strings.Contains(errOut, "did you mean"):
			t.Errorf("shardjob %s: %q guesses where nothing is near", strings.Join(c.args, " "), errOut)
		case c.want != "" && !strings.Contains(errOut, c.want):
			t.Errorf("shardjob %s: %q does not say %s", strings.Join(c.args, " "), errOut, c.want)
		}
	}
}
