package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/regcenter"
)

func TestParseFlagsRegistry(t *testing.T) {
	c, err := parseFlags([]string{"-requests"})
	if err != nil || !slices.Equal(c.registries, []string{regZooKeeper}) {
		t.Fatalf("default registries %q, %v; want %q", c.registries, err, regZooKeeper)
	}
	c, err = parseFlags([]string{"-requests", "-registry", "etcd"})
	if err != nil || !slices.Equal(c.registries, []string{regEtcd}) {
		t.Fatalf("-registry etcd: %q, %v", c.registries, err)
	}
	c, err = parseFlags([]string{"-requests", "-registry", "embedded,zookeeper,etcd"})
	if err != nil || !slices.Equal(c.registries, []string{"embedded", regZooKeeper, regEtcd}) {
		t.Fatalf("-registry embedded,zookeeper,etcd: %q, %v", c.registries, err)
	}
	if _, err = parseFlags([]string{"-requests", "-registry", "etcd,etcd"}); err == nil {
		t.Fatal("-registry etcd,etcd: no error; want one naming the repeat")
	}
	_, err = parseFlags([]string{"-requests", "-registry", "consul"})
	if err == nil || !strings.Contains(err.Error(), `"consul"`) {
		t.Fatalf("-registry consul: %v; want an error naming it", err)
	}
}

func TestQuiet(t *testing.T) {
	for _, c := range []struct {
		d    regcenter.Stats
		want bool
	}{
		{regcenter.Stats{Backend: regcenter.BackendZooKeeper}, true},
		{regcenter.Stats{Writes: 1, Backend: regcenter.BackendZooKeeper}, false},
		{regcenter.Stats{Backend: regcenter.BackendEtcd}, true},
		{regcenter.Stats{Writes: 1, Backend: regcenter.BackendEtcd}, false}, // a write is one txn
		{regcenter.Stats{Reads: 1, Writes: 1, Backend: regcenter.BackendEtcd}, false},
		{regcenter.Stats{Multis: 1, Backend: regcenter.BackendEtcd}, false},
		{regcenter.Stats{Watches: 1, Backend: regcenter.BackendZooKeeper}, false},
	} {
		if got := quiet(c.d); got != c.want {
			t.Errorf("quiet(%+v) = %v, want %v", c.d, got, c.want)
		}
	}
}
