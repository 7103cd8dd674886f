package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/shardjob/shardjob/internal/suggest"
)

// versionHelpLine is the version command's line in "shardjob help".
const versionHelpLine = `Version:
  version                     the shardjob module's version, its source revision when known, and the
                              Go release it was built with`

// runVersion is "shardjob version": it returns the exit code.
func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "shardjob version: unexpected argument %q (usage: shardjob version)\n", args[0])
		return exitUsage
	}
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprint(stdout, versionText(bi, ok, runtime.Version()))
	return exitOK
}

// versionText renders what the binary knows of its build: the main
// module's path and version ("(devel)" for a build from a checkout), the
// VCS revision and whether the tree was modified, and the Go release.
func versionText(bi *debug.BuildInfo, ok bool, goVersion string) string {
	var b strings.Builder
	if !ok || bi == nil || bi.Main.Path == "" {
		b.WriteString("shardjob: module version unknown (built without module information)\n")
	} else {
		v := bi.Main.Version
		if v == "" {
			v = "(devel)"
		}
		fmt.Fprintf(&b, "shardjob %s (%s)\n", v, bi.Main.Path)
		var rev, when, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			line := "revision " + rev
			if when != "" {
				line += " of " + when
			}
			if modified == "true" {
				line += ", with local changes"
			}
			b.WriteString(line + "\n")
		}
	}
	fmt.Fprintf(&b, "built with %s\n", goVersion)
	return b.String()
}

// commandNames lists every top-level command, those dispatched before
// the table included, for "did you mean".
func commandNames() []string {
	names := []string{"dispatch", "run", "console", "version"}
	for _, c := range commands {
		names = append(names, c.name)
	}
	return names
}

// didYouMean returns " (did you mean "x"?)" for the command name nearest
// to name, or "" when none is close (or name is itself a command that
// is refused where it stands, as "help help").
func didYouMean(name string) string {
	if s := suggest.Nearest(name, commandNames()); s != "" && s != name {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}
