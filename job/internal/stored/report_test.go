package stored

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestReportWarnsOncePerVersion: a bad version of a node is logged at warn
// level the first time, with its node, version and quoted start after the
// caller's args, and at debug level when read again; a new version warns
// again.
func TestReportWarnsOncePerVersion(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var b BadValues
	next := func() string { s := buf.String(); buf.Reset(); return strings.TrimSpace(s) }

	if !b.Report(log, "/j/x", 7, 3, []byte("garbage"), "bad record", "item", 2) {
		t.Fatal("first report not first")
	}
	if got, want := next(), `level=WARN msg="bad record" item=2 data="\"garbage\"" node=/j/x version=3`; !strings.HasSuffix(got, want) {
		t.Fatalf("first report:\n got %s\nwant …%s", got, want)
	}
	if b.Report(log, "/j/x", 7, 3, []byte("garbage"), "bad record", "item", 2) {
		t.Fatal("second report of the version first")
	}
	if got := next(); !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "node=/j/x") {
		t.Fatalf("second report: %s", got)
	}
	if !b.Report(log, "/j/x", 8, 4, []byte("more"), "bad record") {
		t.Fatal("a new version not reported first")
	}
	if got := next(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "version=4") {
		t.Fatalf("new version: %s", got)
	}
}
