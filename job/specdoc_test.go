package job_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/job"
)

func TestDecodeSpec(t *testing.T) {
	ctx := context.Background()
	sp, err := job.DecodeSpec(ctx, []byte("name: ping\ncron: '*/5 * * * * *'\nshardingTotalCount: 2\ntype: http\nhttp:\n  url: http://127.0.0.1:1/\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Name != "ping" || sp.ShardingTotalCount != 2 || sp.Type != job.TypeHTTP || sp.Section == nil {
		t.Fatalf("decoded %+v", sp)
	}

	_, err = job.DecodeSpec(ctx, []byte("name: ping\ncron: '*/5 * * * * *'\nshardingTotalCont: 2\ntype: http\nhttp: {url: x}\n"))
	if !errors.Is(err, job.ErrUnknownKey) || !strings.Contains(err.Error(), `did you mean "shardingTotalCount"`) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("misspelt key: %v", err)
	}
	_, err = job.DecodeSpec(ctx, []byte("name: ping\ncron: '*/5 * * * * *'\nshardingTotalCount: 1\ntype: script\n"))
	if !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), "needs a script: section") {
		t.Fatalf("type without its section: %v", err)
	}
	if _, err := job.DecodeSpec(ctx, []byte("  \n")); !errors.Is(err, job.ErrInvalidConfig) {
		t.Fatalf("empty document: %v", err)
	}
	if _, err := job.DecodeSpec(ctx, []byte("[1, 2]")); !errors.Is(err, job.ErrInvalidConfig) {
		t.Fatalf("a list: %v", err)
	}
}
