package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// The quick start runs to its end: its one task is started, finished by
// the worker, and read back, on a fresh SQLite store.
func TestQuickStartFinishesItsTask(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestDocShowsThisProgram keeps docs/dispatch.md's quick start identical
// to this compiled program (from "package main" on).
func TestDocShowsThisProgram(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/dispatch.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	program := string(src[strings.Index(string(src), "package main"):])
	found := false
	for _, block := range strings.Split(string(doc), "```go\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if strings.HasPrefix(block, "package main") {
			found = true
			if block != program {
				t.Errorf("docs/dispatch.md's quick start differs from example/dispatch/quickstart/main.go; copy main.go (from \"package main\" on) into the doc")
			}
		}
	}
	if !found {
		t.Error("docs/dispatch.md has no ```go block starting with \"package main\"")
	}
}
