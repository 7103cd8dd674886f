package backend

import (
	"errors"
	"slices"
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

// ReadBatches keeps the paths in order, each batch within both bounds,
// and a path too long for any batch alone in one of its own.
func TestReadBatches(t *testing.T) {
	paths := []string{"/a", "/b", "/c", "/dddddddddddddddddddddddddddddddddddddddd", "/e"}
	for _, tc := range []struct {
		name               string
		maxPaths, maxBytes int
		want               [][]string
	}{
		{"one batch", 10, 1 << 20, [][]string{paths}},
		{"by count", 2, 1 << 20, [][]string{paths[0:2], paths[2:4], paths[4:]}},
		{"by bytes", 10, 3 * (2 + readOverhead), [][]string{paths[0:3], paths[3:4], paths[4:]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ReadBatches(paths, tc.maxPaths, tc.maxBytes)
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Fatalf("ReadBatches = %q, want %q", got, tc.want)
			}
		})
	}
	if got := ReadBatches(nil, 10, 100); len(got) != 0 {
		t.Errorf("ReadBatches of nothing = %q", got)
	}
}
