package testserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
)

// StartForTest is a test server package's Start: it applies opts to the
// zero options, starts a cluster with start within DefaultTimeout, fails
// tb if it cannot, and closes the cluster when the test ends. pkg ("zktest")
// begins the messages.
func StartForTest[O any, C io.Closer](tb testing.TB, pkg string, start func(context.Context, O) (C, error), opts []func(*O)) C {
	tb.Helper()
	var o O
	for _, f := range opts {
		f(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	c, err := start(ctx, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("%s: close: %v", pkg, err)
		}
	})
	return c
}

// RunTests is a test server package's RunTests, for a TestMain: it
// applies opts to the zero options, starts a cluster with start within
// DefaultTimeout, stores it in *c, runs the tests (m.Run) and closes the cluster,
// returning the exit code. When the cluster does not start it says why on
// stderr, after pkg, and returns 1.
func RunTests[O any, C io.Closer](m interface{ Run() int }, c *C, pkg string, start func(context.Context, O) (C, error), opts []func(*O)) int {
	var o O
	for _, f := range opts {
		f(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	cl, err := start(ctx, o)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, pkg+":", err)
		return 1
	}
	*c = cl
	defer cl.Close()
	return m.Run()
}
