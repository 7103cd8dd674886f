package backend

import (
	"errors"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{"": "/", "/": "/", "a": "/a", "/a/b": "/a/b", "a/b": "/a/b"} {
		if got, err := CleanPath(in); err != nil || got != want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"/a/", "/a//b", "/a/./b", "/a/..", "/a\x00"} {
		if got, err := CleanPath(in); err == nil {
			t.Errorf("CleanPath(%q) = %q, want an error", in, got)
		}
	}
}

// A transaction is measured as regcenter.MultiBytes measures it, and the
// error names the op with the most data.
func TestCheckMultiSize(t *testing.T) {
	ops := []regcenter.Op{
		regcenter.CheckOp{Path: "/a"},
		regcenter.SetOp{Path: "/b", Data: make([]byte, 100)},
		regcenter.CreateOp{Path: "/c", Data: make([]byte, 10)},
		regcenter.DeleteOp{Path: "/d"},
	}
	total := regcenter.MultiBytes(ops...)
	if err := CheckMultiSize(total, ops); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	err := CheckMultiSize(total-1, ops)
	if !errors.Is(err, regcenter.ErrTooLarge) || !strings.Contains(err.Error(), "the largest is set /b (version 0) with 100 bytes") {
		t.Errorf("one byte over: %v", err)
	}
	for i, want := range []string{"/a", "/b", "/c", "/d"} {
		if got := OpPath(ops[i]); got != want {
			t.Errorf("OpPath(%v) = %q, want %q", ops[i], got, want)
		}
	}
}
