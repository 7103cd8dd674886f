package backend

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/shardjob/shardjob/regcenter"
)

// DeleteTree removes p and its descendants from c, deepest first, with
// c's own Children and Delete: a node already gone is no error, and a
// child created meanwhile is removed on the next pass.
func DeleteTree(ctx context.Context, c regcenter.Center, p string) error {
	kids, err := c.Children(ctx, p)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := DeleteTree(ctx, c, path.Join(p, k)); err != nil {
			return err
		}
	}
	err = c.Delete(ctx, p, -1)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil
	}
	if errors.Is(err, regcenter.ErrNotEmpty) { // a child appeared meanwhile
		return DeleteTree(ctx, c, p)
	}
	return err
}

// WrapPath says which request on which node failed: err with "(op p)"
// after it, or, for a context's end, "regcenter: op p: " before it. nil
// stays nil.
func WrapPath(op, p string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("regcenter: %s %s: %w", op, p, err)
	}
	return fmt.Errorf("%w (%s %s)", err, op, p)
}

// CleanPath returns p as an absolute node path ("a/b" is "/a/b", "" is
// "/"), or an error naming it when it ends in a slash, has an empty, "."
// or ".." segment, or holds a NUL.
func CleanPath(p string) (string, error) {
	if p == "" || p == "/" {
		return "/", nil
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if strings.HasSuffix(p, "/") || strings.Contains(p, "//") || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("regcenter: invalid path %q", p)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return "", fmt.Errorf("regcenter: invalid path %q", p)
		}
	}
	return p, nil
}
