package history

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigDefaultsAndErrors(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Driver != DriverSQLite || c.DSN != DefaultSQLiteFile || c.BufferSize != DefaultBufferSize || c.BatchSize != DefaultBatchSize ||
		c.FlushInterval != time.Second || c.MaxAge != DefaultMaxAge || c.MaxRows != DefaultMaxRows || c.DropLogInterval != time.Minute ||
		c.Logger == nil {
		t.Errorf("defaults: %+v", c)
	}
	for _, bad := range []struct {
		cfg  Config
		name string
	}{
		{Config{Driver: "mysql"}, "Driver"},
		{Config{Driver: DriverPostgres}, "DSN"},
		{Config{BufferSize: -1}, "BufferSize"},
		{Config{BufferSize: MaxBufferSize + 1}, "BufferSize"},
		{Config{BatchSize: MaxBatchSize + 1}, "BatchSize"},
		{Config{BatchSize: 100, BufferSize: 10}, "BatchSize 100 is larger than BufferSize"},
		{Config{FlushInterval: -time.Second}, "FlushInterval"},
		{Config{WriteTimeout: -1}, "WriteTimeout"},
		{Config{MaxAge: -time.Hour}, "MaxAge"},
		{Config{MaxRows: -5}, "MaxRows"},
		{Config{RetentionInterval: -1}, "RetentionInterval"},
		{Config{RetentionBatch: -1}, "RetentionBatch"},
		{Config{DropLogInterval: -1}, "DropLogInterval"},
		{Config{MaxErrorLength: -3}, "MaxErrorLength"},
		{Config{FlushInterval: time.Minute, MaxBackoff: time.Second}, "MaxBackoff"},
	} {
		_, err := bad.cfg.withDefaults()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), bad.name) {
			t.Errorf("%+v: %v, want ErrInvalidConfig naming %s", bad.cfg, err, bad.name)
		}
		if _, err := Open(t.Context(), bad.cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Open(%+v): %v, want ErrInvalidConfig", bad.cfg, err)
		}
	}
}

func TestOneLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 10, ""},
		{"plain", 10, "plain"},
		{"two\nlines\r\n\tand tabs", 100, "two lines and tabs"},
		{"nul\x00byte", 100, "nul byte"},
		{"bad \xff utf8", 100, "bad \uFFFD utf8"},
		{"0123456789abcdef", 10, "0123456..."},
		{"ééééé", 7, "éé..."},
		{"  leading and trailing  \n", 100, "leading and trailing"},
	} {
		if got := oneLine(c.in, c.n); got != c.want || len(got) > c.n {
			t.Errorf("oneLine(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
