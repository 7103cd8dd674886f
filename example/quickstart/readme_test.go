package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEShowsThisProgram keeps the README's Go snippet identical to
// this compiled program (from "package main" on).
func TestREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	program := string(src[strings.Index(string(src), "package main"):])
	found := false
	for _, block := range strings.Split(string(readme), "```go\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if strings.HasPrefix(block, "package main") {
			found = true
			if block != program {
				t.Errorf("the README's program differs from example/quickstart/main.go; copy main.go (from \"package main\" on) into README.md")
			}
		}
	}
	if !found {
		t.Error("README.md has no ```go block starting with \"package main\"")
	}
}

// TestREADMESaysHowToInstall keeps the install line a newcomer copies.
func TestREADMESaysHowToInstall(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "go get github.com/shardjob/shardjob@latest") {
		t.Error("README.md does not say how to install the module (go get github.com/shardjob/shardjob@latest)")
	}
}
