package zookeeper_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

// TestWritesLargerThanMaxNodeBytesAreRefused: oversized writes fail with
// ErrTooLarge, naming the path and sizes, before ZooKeeper sees them (they
// used to come back as a lost connection or "zk: buffer too small"), and
// the session carries on.
func TestWritesLargerThanMaxNodeBytesAreRefused(t *testing.T) {
	z := connect(t, regcenter.Config{})
	c := ctx(t)
	if _, err := z.Create(c, "/big", []byte("small"), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		size int
		want string
	}{
		{"1.26 MB", 1_260_000, "set /big: data is 1260000 bytes, 215520 over the limit of 1044480"},
		{"2 MB", 2 << 20, "set /big: data is 2097152 bytes, 1052672 over the limit of 1044480"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := bytes.Repeat([]byte("x"), tt.size)
			_, err := z.Set(c, "/big", data, -1)
			checkTooLarge(t, err, tt.want)
			_, err = z.Create(c, "/big2", data, regcenter.Persistent)
			checkTooLarge(t, err, "create /big2: data is")
			err = z.Multi(c, regcenter.CheckOp{Path: "/big", Version: 0}, regcenter.SetOp{Path: "/big", Data: data, Version: -1})
			checkTooLarge(t, err, "the largest is set /big (version -1)")
		})
	}
	// The session is intact and nothing was written.
	got, _, err := z.Get(c, "/big")
	if err != nil || string(got) != "small" {
		t.Fatalf("after refused writes: %q, %v", got, err)
	}
	if ok, _, err := z.Exists(c, "/big2"); err != nil || ok {
		t.Fatalf("/big2 exists: %v, %v", ok, err)
	}

	// Small writes that together exceed the limit are refused too.
	chunk := bytes.Repeat([]byte("y"), 300_000)
	ops := []regcenter.Op{}
	for _, p := range []string{"/m1", "/m2", "/m3", "/m4"} {
		ops = append(ops, regcenter.CreateOp{Path: p, Data: chunk})
	}
	checkTooLarge(t, z.Multi(c, ops...), "transaction of 4 ops is ")
}

func checkTooLarge(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, regcenter.ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// TestWriteAtMaxNodeBytesSucceeds: the default limit leaves enough room
// below the real server's jute.maxbuffer for the request header.
func TestWriteAtMaxNodeBytesSucceeds(t *testing.T) {
	z := connect(t, regcenter.Config{})
	c := ctx(t)
	data := bytes.Repeat([]byte("z"), regcenter.DefaultMaxNodeBytes)
	if _, err := z.Create(c, "/full/node", data, regcenter.Persistent); err != nil {
		t.Fatalf("create of exactly DefaultMaxNodeBytes: %v", err)
	}
	if _, err := z.Set(c, "/full/node", data, -1); err != nil {
		t.Fatalf("set of exactly DefaultMaxNodeBytes: %v", err)
	}
	got, _, err := z.Get(c, "/full/node")
	if err != nil || len(got) != len(data) {
		t.Fatalf("get: %d bytes, %v", len(got), err)
	}
	half := data[:regcenter.DefaultMaxNodeBytes/2-200]
	if err := z.Multi(c, regcenter.CreateOp{Path: "/full/a", Data: half}, regcenter.CreateOp{Path: "/full/b", Data: half}); err != nil {
		t.Fatalf("multi just within the limit: %v", err)
	}
}

// TestMaxNodeBytesIsConfigurable: a lower limit is applied; one above what
// the client can send is refused.
func TestMaxNodeBytesIsConfigurable(t *testing.T) {
	z := connect(t, regcenter.Config{MaxNodeBytes: 1000})
	c := ctx(t)
	_, err := z.Create(c, "/n", bytes.Repeat([]byte("x"), 1001), regcenter.Persistent)
	checkTooLarge(t, err, "1 over the limit of 1000")
	if _, err := z.Create(c, "/n", bytes.Repeat([]byte("x"), 1000), regcenter.Persistent); err != nil {
		t.Fatal(err)
	}
	bad := regcenter.Config{Servers: []string{"zk:2181"}, MaxNodeBytes: 2 << 20}
	if err := bad.Validate(); !errors.Is(err, regcenter.ErrInvalidConfig) || !strings.Contains(err.Error(), "maxNodeBytes") {
		t.Fatalf("Validate = %v, want maxNodeBytes refused", err)
	}
}
